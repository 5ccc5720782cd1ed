package server_test

import (
	"encoding/json"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// TestAcquireGraceOverHTTP: goal — "grace" on acquire and acquire_many is
// read and checked: outside 0..ttl it is 400 bad_grace and changes
// nothing; within it the grant is made, and status shows the holder held.
// Method: one member; bad bodies, then a good one and status.
func TestAcquireGraceOverHTTP(t *testing.T) {
	ts, _ := newServer(t)
	for _, tc := range []struct{ path, body string }{
		{api.PathAcquire, `{"resource":"r","client_id":"a","ttl":1000,"grace":1001}`},
		{api.PathAcquire, `{"resource":"r","client_id":"a","ttl":1000,"grace":-1}`},
		{api.PathAcquireMany, `{"resources":["r"],"client_id":"a","ttl":1000,"grace":2000}`},
	} {
		code, b := do(t, "POST", ts.URL+tc.path, tc.body)
		var e api.Error
		if err := json.Unmarshal(b, &e); err != nil || code != 400 || e.Code != api.CodeBadGrace {
			t.Errorf("%s %s = %d %s, want 400 bad_grace", tc.path, tc.body, code, b)
		}
	}
	code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"r","client_id":"a","ttl":60000,"grace":60000}`)
	var got api.AcquireResponse
	if err := json.Unmarshal(b, &got); err != nil || code != 200 || !got.Granted || got.FencingToken != 1 {
		t.Fatalf("acquire with grace = %d %s, want the first grant", code, b)
	}
	code, b = do(t, "GET", ts.URL+api.PathStatus+"?resource=r", "")
	var st api.StatusResponse
	if err := json.Unmarshal(b, &st); err != nil || code != 200 || len(st.Holders) != 1 ||
		st.Holders[0].State != api.HolderHeld || st.Holders[0].GraceMs != 60000 || st.Holders[0].GraceRemainingMs != 0 {
		t.Fatalf("status = %d %s, want one held holder with grace 60000", code, b)
	}
}
