package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// TestValidateAnswersWhetherATokenIsAHolders: goal — GET /lock/validate
// says valid exactly for the token of a current holder, through the log
// (and from the member's state with stale=true, saying so), and refuses
// bad queries with 400. Method: grant, release, grant again on r, then a
// table of tokens: the holder's, the older one of the same resource, one
// on a resource nobody holds; then the bad queries. A read through the log
// answers at a log time not before the grant that returned before it
// (which may be 0: a fresh group's first entries are at log time 0).
func TestValidateAnswersWhetherATokenIsAHolders(t *testing.T) {
	ts, _ := newServer(t)
	acquire := func() api.AcquireResponse {
		t.Helper()
		code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"r","client_id":"a","ttl":60000}`)
		var out api.AcquireResponse
		if err := json.Unmarshal(b, &out); err != nil || code != 200 || !out.Granted {
			t.Fatalf("acquire = %d %s", code, b)
		}
		return out
	}
	old := acquire()
	if code, b := do(t, "POST", ts.URL+api.PathRelease, `{"resource":"r","lease_id":"`+old.LeaseID+`"}`); code != 200 {
		t.Fatalf("release = %d %s", code, b)
	}
	holder := acquire()

	for _, tc := range []struct {
		name     string
		resource string
		token    uint64
		stale    bool
		valid    bool
		max      uint64
	}{
		{"holder's token", "r", holder.FencingToken, false, true, holder.FencingToken},
		{"older token after a re-grant", "r", old.FencingToken, false, false, holder.FencingToken},
		{"unknown resource", "nobody", holder.FencingToken, false, false, 0},
		{"holder's token, stale", "r", holder.FencingToken, true, true, holder.FencingToken},
		{"older token, stale", "r", old.FencingToken, true, false, holder.FencingToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := fmt.Sprintf("?resource=%s&token=%d", tc.resource, tc.token)
			if tc.stale {
				q += "&stale=true"
			}
			code, b := do(t, "GET", ts.URL+api.PathValidate+q, "")
			var out api.ValidateResponse
			if err := json.Unmarshal(b, &out); err != nil || code != 200 {
				t.Fatalf("validate%s = %d %s", q, code, b)
			}
			want := api.ValidateResponse{Resource: tc.resource, Token: tc.token, Valid: tc.valid, HolderTokenMax: tc.max,
				LogTimeMs: out.LogTimeMs, Stale: tc.stale, CaughtUp: out.CaughtUp}
			// Stale reads this member's state: one member here, so it has
			// applied the grant too.
			if out != want || out.LogTimeMs < holder.LogTimeMs || (out.CaughtUp != nil) != tc.stale ||
				!strings.Contains(string(b), `"log_time":`) {
				t.Fatalf("validate%s = %s, want %+v", q, b, want)
			}
		})
	}

	for _, q := range []string{"", "?resource=r", "?token=1", "?resource=&token=1", "?resource=r&token=0", "?resource=r&token=-1",
		"?resource=r&token=x", "?resource=r&token=1.5", "?resource=r&token=99999999999999999999", "?resource=r&token=1&token=2",
		"?resource=r&token=1&stale=maybe", "?resource=r&token=1&lease_id=x"} {
		code, b := do(t, "GET", ts.URL+api.PathValidate+q, "")
		var e api.Error
		if err := json.Unmarshal(b, &e); err != nil || code != 400 || e.Code != api.CodeInvalidArgument {
			t.Errorf("validate%s = %d %s, want 400 invalid_argument", q, code, b)
		}
	}
	if code, b := do(t, "POST", ts.URL+api.PathValidate+"?resource=r&token=1", ""); code != 405 {
		t.Errorf("POST validate = %d %s, want 405", code, b)
	}
}
