package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// TestFenceIsTheHighestHolderToken: goal — GET /lock/fence answers the
// highest fencing token among the resource's current holders, through the
// log, and 0 when nobody holds it (never granted, or every holder gone:
// it is not a high-water mark); its query is read as strictly as status's.
// Method: two shared holders, then release them one by one, reading fence
// after each step; then the bad queries. Each answer's log time is not
// before the one of the answer before it (a read through the log comes
// after the writes that returned before it). It may be 0: a fresh group's
// first entry is at log time 0, and the first fence may be that entry.
func TestFenceIsTheHighestHolderToken(t *testing.T) {
	ts, _ := newServer(t)
	var logTime int64 // of the last answer
	after := func(what string, ms int64) {
		t.Helper()
		if ms < logTime {
			t.Fatalf("%s answered at log time %d ms, before the previous answer's %d ms", what, ms, logTime)
		}
		logTime = ms
	}
	fence := func(resource string) api.FenceResponse {
		t.Helper()
		code, b := do(t, "GET", ts.URL+api.PathFence+"?resource="+resource, "")
		var out api.FenceResponse
		if err := json.Unmarshal(b, &out); err != nil || code != 200 || out.Resource != resource ||
			!strings.Contains(string(b), `"holder_token_max":`) || !strings.Contains(string(b), `"log_time":`) {
			t.Fatalf("fence %s = %d %s", resource, code, b)
		}
		after("fence", out.LogTimeMs)
		return out
	}
	acquire := func(client string) api.AcquireResponse {
		t.Helper()
		code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"r","client_id":"`+client+`","ttl":60000,"mode":"shared"}`)
		var out api.AcquireResponse
		if err := json.Unmarshal(b, &out); err != nil || code != 200 || !out.Granted {
			t.Fatalf("acquire by %s = %d %s", client, code, b)
		}
		after("acquire", out.LogTimeMs)
		return out
	}
	release := func(l api.AcquireResponse) {
		t.Helper()
		code, b := do(t, "POST", ts.URL+api.PathRelease, `{"resource":"r","lease_id":"`+l.LeaseID+`"}`)
		var out api.ReleaseResponse
		if err := json.Unmarshal(b, &out); err != nil || code != 200 {
			t.Fatalf("release = %d %s", code, b)
		}
		after("release", out.LogTimeMs)
	}

	if got := fence("r").HolderTokenMax; got != 0 {
		t.Fatalf("never granted: holder_token_max %d, want 0", got)
	}
	first, second := acquire("a"), acquire("b")
	if second.FencingToken <= first.FencingToken {
		t.Fatalf("tokens %d then %d do not rise", first.FencingToken, second.FencingToken)
	}
	if got := fence("r").HolderTokenMax; got != second.FencingToken {
		t.Fatalf("two holders: holder_token_max %d, want %d", got, second.FencingToken)
	}
	release(second)
	if got := fence("r").HolderTokenMax; got != first.FencingToken {
		t.Fatalf("after the newest holder left: holder_token_max %d, want %d", got, first.FencingToken)
	}
	release(first)
	if got := fence("r").HolderTokenMax; got != 0 {
		t.Fatalf("nobody holds: holder_token_max %d, want 0", got)
	}

	for _, q := range []string{"", "?resource=", "?resource=r&stale=true", "?resource=r&resource=s", "?resource=%zz"} {
		code, b := do(t, "GET", ts.URL+api.PathFence+q, "")
		var e api.Error
		if err := json.Unmarshal(b, &e); err != nil || code != 400 || e.Code != api.CodeInvalidArgument {
			t.Errorf("fence%s = %d %s, want 400 invalid_argument", q, code, b)
		}
	}
	if code, b := do(t, "POST", ts.URL+api.PathFence+"?resource=r", ""); code != 405 {
		t.Errorf("POST fence = %d %s, want 405", code, b)
	}
}
