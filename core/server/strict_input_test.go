package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// lockCounts is what the lock table holds, without its log position: a new
// leader's baseline Tick may advance that at any moment.
func lockCounts(n *node.Node) lock.Metrics {
	m := n.Stats().Lock
	m.LastIndex, m.LogTime = 0, 0
	return m
}

// wantInvalid fails unless the reply is 400 invalid_argument with a message.
func wantInvalid(t *testing.T, code int, b []byte) {
	t.Helper()
	var e api.Error
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("body %q is not a JSON error: %v", b, err)
	}
	if code != http.StatusBadRequest || e.Code != api.CodeInvalidArgument || e.Error == "" {
		t.Fatalf("got %d %s, want 400 invalid_argument with a message", code, b)
	}
}

// TestInvalidUTF8IsRejectedBeforeDecoding: goal — invalid UTF-8 in any
// string of a request (raw bytes, or \ud800-style escapes of lone
// surrogates) is refused with 400 invalid_argument instead of being
// rewritten to U+FFFD by encoding/json, so "col\xff" and "col\xfe" can never
// name the same lock. Method: for every string field of every body, and for
// the status query string, send a bad value and expect 400 with the state
// unchanged; then check that a valid surrogate pair still works.
func TestInvalidUTF8IsRejectedBeforeDecoding(t *testing.T) {
	ts, c := newServer(t)
	const lease = "00112233445566778899aabbccddeeff"
	if code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"held","client_id":"a","ttl":60000}`); code != 200 {
		t.Fatalf("warm-up acquire: %d %s", code, b)
	}
	before := lockCounts(c.Nodes[0])
	cases := []struct{ name, path, body string }{
		{"resource raw 0xff", api.PathAcquire, "{\"resource\":\"col\xff\",\"client_id\":\"a\",\"ttl\":1000}"},
		{"resource raw 0xfe", api.PathAcquire, "{\"resource\":\"col\xfe\",\"client_id\":\"a\",\"ttl\":1000}"},
		{"client_id raw", api.PathAcquire, "{\"resource\":\"r\",\"client_id\":\"a\xc3\",\"ttl\":1000}"},
		{"request_id raw", api.PathAcquire, "{\"resource\":\"r\",\"client_id\":\"a\",\"ttl\":1000,\"request_id\":\"\xed\xa0\x80\"}"},
		{"mode raw", api.PathAcquire, "{\"resource\":\"r\",\"client_id\":\"a\",\"ttl\":1000,\"mode\":\"shared\xff\"}"},
		{"policy raw", api.PathAcquire, "{\"resource\":\"r\",\"client_id\":\"a\",\"ttl\":1000,\"policy\":\"fifo\xff\"}"},
		{"key raw", api.PathAcquire, "{\"resource\":\"r\",\"client_id\":\"a\",\"ttl\":1000,\"\xff\":1}"},
		{"lone high surrogate", api.PathAcquire, `{"resource":"col\ud800","client_id":"a","ttl":1000}`},
		{"lone low surrogate", api.PathAcquire, `{"resource":"r","client_id":"\uDC00x","ttl":1000}`},
		{"high then non-surrogate", api.PathAcquire, `{"resource":"\ud83d\u0041","client_id":"a","ttl":1000}`},
		{"two high surrogates", api.PathAcquire, `{"resource":"\ud83d\ud83d","client_id":"a","ttl":1000}`},
		{"release resource raw", api.PathRelease, "{\"resource\":\"held\xff\",\"lease_id\":\"" + lease + "\"}"},
		{"release lease_id raw", api.PathRelease, "{\"resource\":\"held\",\"lease_id\":\"" + lease[:31] + "\xff\"}"},
		{"renew resource escape", api.PathRenew, `{"resource":"held\udfff","lease_id":"` + lease + `"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, b := do(t, "POST", ts.URL+tc.path, tc.body)
			wantInvalid(t, code, b)
		})
	}
	for _, q := range []string{"resource=%FF", "resource=%FF&stale=true", "resource=ok&stale=%FE"} {
		t.Run("query "+q, func(t *testing.T) {
			code, b := do(t, "GET", ts.URL+api.PathStatus+"?"+q, "")
			wantInvalid(t, code, b)
		})
	}
	if after := lockCounts(c.Nodes[0]); after != before {
		t.Fatalf("invalid UTF-8 changed the lock table: %+v, was %+v", after, before)
	}
	// A valid pair (U+1F512) and an explicit U+FFFD are ordinary characters.
	for _, body := range []string{
		`{"resource":"lock-\ud83d\udd12","client_id":"a","ttl":1000}`,
		`{"resource":"lock-\ufffd","client_id":"a","ttl":1000}`,
	} {
		if code, b := do(t, "POST", ts.URL+api.PathAcquire, body); code != 200 || !strings.Contains(string(b), `"granted":true`) {
			t.Fatalf("acquire %s = %d %s, want granted", body, code, b)
		}
	}
}

// TestJSONKeysAreExactAndUnique: goal — a body names each field exactly
// (case-sensitively) and at most once; encoding/json alone would match
// "RESOURCE" to resource and let a duplicate key silently win. Method: send
// such bodies to each POST endpoint and expect 400 with no state change.
func TestJSONKeysAreExactAndUnique(t *testing.T) {
	ts, c := newServer(t)
	const lease = "00112233445566778899aabbccddeeff"
	if code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"held","client_id":"a","ttl":60000}`); code != 200 {
		t.Fatalf("warm-up acquire: %d %s", code, b)
	}
	before := lockCounts(c.Nodes[0])
	cases := []struct{ name, path, body string }{
		{"upper-case keys", api.PathAcquire, `{"RESOURCE":"r","CLIENT_ID":"a","TTL":1000}`},
		{"one mixed-case key", api.PathAcquire, `{"resource":"r","client_id":"a","Ttl":1000}`},
		{"duplicate resource", api.PathAcquire, `{"resource":"r","resource":"s","client_id":"a","ttl":1000}`},
		{"duplicate ttl", api.PathAcquire, `{"resource":"r","client_id":"a","ttl":1000,"ttl":2000}`},
		{"duplicate via escape", api.PathAcquire, `{"resource":"r","\u0072esource":"s","client_id":"a","ttl":1000}`},
		{"release mixed case", api.PathRelease, `{"resource":"r","Lease_ID":"` + lease + `"}`},
		{"release duplicate", api.PathRelease, `{"resource":"r","lease_id":"` + lease + `","lease_id":"` + lease + `"}`},
		{"renew duplicate ttl", api.PathRenew, `{"resource":"r","lease_id":"` + lease + `","ttl":1,"ttl":2}`},
		{"null body", api.PathAcquire, `null`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, b := do(t, "POST", ts.URL+tc.path, tc.body)
			wantInvalid(t, code, b)
		})
	}
	if after := lockCounts(c.Nodes[0]); after != before {
		t.Fatalf("a rejected body changed the lock table: %+v, was %+v", after, before)
	}
}

// TestHTTPSurfaceIsUniform: goal — every endpoint treats methods and query
// strings the same documented way: GET routes also answer HEAD, a wrong
// method is 405 JSON (also on /metrics), and a query string with unknown,
// repeated, malformed or non-boolean parameters is 400. Method: a table of
// requests with the status and error code each must get.
func TestHTTPSurfaceIsUniform(t *testing.T) {
	ts, _ := newServer(t)
	if code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"r","client_id":"a","ttl":60000}`); code != 200 {
		t.Fatalf("acquire: %d %s", code, b)
	}
	for _, tc := range []struct {
		method, target string
		want           int
		code           api.Code // "" for a 2xx reply
	}{
		{"POST", "/metrics", 405, api.CodeMethodNotAllowed},
		{"PUT", "/metrics", 405, api.CodeMethodNotAllowed},
		{"POST", "/healthz", 405, api.CodeMethodNotAllowed},
		{"HEAD", "/healthz", 200, ""},
		{"HEAD", "/livez", 200, ""},
		{"HEAD", "/readyz", 200, ""},
		{"HEAD", "/metrics", 200, ""},
		{"HEAD", "/cluster", 200, ""},
		{"HEAD", "/lock/status?resource=r", 200, ""},
		{"GET", "/lock/status?resource=r&stale=true", 200, ""},
		{"GET", "/lock/status?resource=r&stale=1", 200, ""},
		{"GET", "/lock/status?resource=r&stale=false", 200, ""},
		{"GET", "/lock/status?resource=r&stale=0", 200, ""},
		{"GET", "/lock/status?resource=r&stale=maybe", 400, api.CodeInvalidArgument},
		{"GET", "/lock/status?resource=r&stale=", 400, api.CodeInvalidArgument},
		{"GET", "/lock/status?resource=r&stale=TRUE", 400, api.CodeInvalidArgument},
		{"GET", "/lock/status?resource=r&color=red", 400, api.CodeInvalidArgument},
		{"GET", "/lock/status?resource=r&resource=s", 400, api.CodeInvalidArgument},
		{"GET", "/lock/status?resource=r&stale=true&stale=false", 400, api.CodeInvalidArgument},
		{"GET", "/lock/status?resource=%zz", 400, api.CodeInvalidArgument},
		{"GET", "/lock/status?resource=r;stale=true", 400, api.CodeInvalidArgument},
		{"GET", "/cluster?verbose=1", 400, api.CodeInvalidArgument},
		{"GET", "/healthz?x=1", 400, api.CodeInvalidArgument},
		{"POST", "/lock/acquire?wait=10", 400, api.CodeInvalidArgument},
	} {
		code, b := do(t, tc.method, ts.URL+tc.target, "")
		if code != tc.want {
			t.Errorf("%s %s = %d %s, want %d", tc.method, tc.target, code, b, tc.want)
			continue
		}
		if tc.code == "" {
			continue
		}
		var e api.Error
		if err := json.Unmarshal(b, &e); err != nil || e.Code != tc.code || e.Error == "" {
			t.Errorf("%s %s = %d %s, want a JSON %s error", tc.method, tc.target, code, b, tc.code)
		}
	}
}
