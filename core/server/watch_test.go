package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Goal: a bad watch request is refused with a clear 4xx JSON error before
// any stream starts. Method: a table of query strings against one member.
func TestWatchBadInputIsRefused(t *testing.T) {
	ts, _ := newServer(t)
	client := &http.Client{Timeout: 10 * time.Second}
	cases := []struct {
		query  string
		status int
		code   api.Code
	}{
		{"", 400, api.CodeInvalidArgument},                        // no resource, no prefix
		{"resource=", 400, api.CodeInvalidArgument},               // empty resource without prefix
		{"resource=r&prefix=maybe", 400, api.CodeInvalidArgument}, // not a boolean
		{"resource=r&start=1", 400, api.CodeInvalidArgument},      // no index
		{"resource=r&start=0:5", 400, api.CodeInvalidArgument},    // shards start at 1
		{"resource=r&start=2:5", 400, api.CodeInvalidArgument},    // a shard the watch does not cover
		{"resource=r&start=1:x", 400, api.CodeInvalidArgument},    // not a number
		{"resource=r&nope=1", 400, api.CodeInvalidArgument},       // unknown parameter
		{"resource=r&resource=s", 400, api.CodeInvalidArgument},   // repeated parameter
	}
	for _, tc := range cases {
		// A watch that wrongly starts streams forever: the client's
		// timeout turns that into a failure instead of a hang.
		resp, err := client.Get(ts.URL + api.PathWatch + "?" + tc.query)
		if err != nil {
			t.Errorf("?%s: %v", tc.query, err)
			continue
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var e api.Error
		if err != nil || resp.StatusCode != tc.status || json.Unmarshal(body, &e) != nil || e.Code != tc.code || e.Error == "" {
			t.Errorf("?%s: %d %s %v, want %d %s", tc.query, resp.StatusCode, body, err, tc.status, tc.code)
		}
	}
	if code, body := do(t, http.MethodPost, ts.URL+api.PathWatch+"?resource=r", ""); code != 405 {
		t.Errorf("POST: %d %s, want 405", code, body)
	}
	if code, _ := do(t, http.MethodHead, ts.URL+api.PathWatch+"?resource=r", ""); code != 200 {
		t.Errorf("HEAD: %d, want 200 without a stream", code)
	}
}
