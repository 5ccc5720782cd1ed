package scenarios

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/lockstep/lockstep/core/api"
)

// The workload names the request id the server sees. The Go client binds
// a caller's RequestID to its resource (client.WireRequestID), so that an
// application can never send one id for two resources; the workload
// reuses ids across resources on purpose, to put the server's per-shard
// dedupe to the test, so it speaks for the wire: recordingTransport sends
// the id the workload chose, on every attempt of the call, and the
// history records what was sent.

// wireRequestIDKey carries the workload's request id in a call's context.
type wireRequestIDKey struct{}

// withWireRequestID returns ctx carrying id (none when id is empty).
func withWireRequestID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, wireRequestIDKey{}, id)
}

// setWireRequestID returns body, an acquire or acquire_many of req, with
// the request id req's context carries; body unchanged otherwise.
func setWireRequestID(req *http.Request, body []byte) []byte {
	id, _ := req.Context().Value(wireRequestIDKey{}).(string)
	if id == "" {
		return body
	}
	var out []byte
	var err error
	switch req.URL.Path {
	case api.PathAcquire:
		var a api.AcquireRequest
		if json.Unmarshal(body, &a) != nil {
			return body
		}
		a.RequestID = id
		out, err = json.Marshal(a)
	case api.PathAcquireMany:
		var a api.AcquireManyRequest
		if json.Unmarshal(body, &a) != nil {
			return body
		}
		a.RequestID = id
		out, err = json.Marshal(a)
	default:
		return body
	}
	if err != nil {
		return body
	}
	return out
}
