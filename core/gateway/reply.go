package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/lockstep/lockstep/core/api"
)

// answer is a member's reply (or one the gateway made up in the same
// format), relayed to the client byte for byte.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// relayedHeaders are the reply headers a member sets that mean something
// to a client.
var relayedHeaders = []string{"Content-Type", "Retry-After", "Allow", "Connection", api.HeaderMapVersion}

// write sends a to the client unchanged.
func (a answer) write(w http.ResponseWriter) {
	for _, k := range relayedHeaders {
		if v := a.header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// code is the api error code in a's body ("" for a success or a body that
// is not an api.Error).
func (a answer) code() api.Code {
	if a.status/100 == 2 {
		return ""
	}
	var e api.Error
	if json.Unmarshal(a.body, &e) != nil {
		return ""
	}
	return e.Code
}

// errorAnswer is an api.Error reply the gateway makes itself, in the
// member's format.
func errorAnswer(code api.Code, msg string) answer {
	b, _ := json.Marshal(api.Error{Error: msg, Code: code})
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return answer{status: code.HTTPStatus(), header: h, body: append(b, '\n')}
}

func writeError(w http.ResponseWriter, code api.Code, msg string) {
	errorAnswer(code, msg).write(w)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
