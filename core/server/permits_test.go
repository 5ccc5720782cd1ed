package server_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// TestAcquirePermits: goal — POST /lock/acquire with "permits":N makes a
// semaphore of N: N exclusive holders with increasing tokens, validate
// true for each holder's token, status showing "permits" and every
// holder; bad permits are 400 bad_permits before the log, other permits
// on a live resource 409 permits_mismatch, and acquire_many refused on
// a semaphore.
func TestAcquirePermits(t *testing.T) {
	ts, _ := newServer(t)
	acquire := func(client, extra string) (int, api.AcquireResponse, api.Error) {
		t.Helper()
		code, b := do(t, "POST", ts.URL+api.PathAcquire, fmt.Sprintf(`{"resource":"pool","client_id":%q,"ttl":60000%s}`, client, extra))
		var out api.AcquireResponse
		var e api.Error
		if code == 200 {
			_ = json.Unmarshal(b, &out)
		} else {
			_ = json.Unmarshal(b, &e)
		}
		return code, out, e
	}
	_, a, _ := acquire("a", `,"permits":2`)
	_, b, _ := acquire("b", `,"permits":2`)
	if !a.Granted || !b.Granted || b.FencingToken <= a.FencingToken {
		t.Fatalf("two permits: %+v %+v", a, b)
	}
	if code, c, _ := acquire("c", `,"permits":2`); code != 200 || c.Granted {
		t.Fatalf("third permit of 2: %d %+v, want 200 not granted", code, c)
	}
	for _, tc := range []struct {
		extra  string
		status int
		code   api.Code
	}{
		{`,"permits":1025`, 400, api.CodeBadPermits},
		{`,"permits":-1`, 400, api.CodeBadPermits},
		{`,"permits":2,"mode":"shared"`, 400, api.CodeBadPermits},
		{`,"permits":3`, 409, api.CodePermitsMismatch},
		{``, 409, api.CodePermitsMismatch},
		{`,"permits":1`, 409, api.CodePermitsMismatch},
		{`,"mode":"shared"`, 409, api.CodePermitsMismatch},
	} {
		if code, _, e := acquire("c", tc.extra); code != tc.status || e.Code != tc.code {
			t.Errorf("acquire%s: %d %+v, want %d %s", tc.extra, code, e, tc.status, tc.code)
		}
	}
	code, body := do(t, "POST", ts.URL+api.PathAcquireMany, `{"resources":["pool","other"],"client_id":"m","ttl":60000}`)
	var e api.Error
	if _ = json.Unmarshal(body, &e); code != 409 || e.Code != api.CodePermitsMismatch {
		t.Errorf("acquire_many on a semaphore: %d %s, want 409 %s", code, body, api.CodePermitsMismatch)
	}

	code, body = do(t, "GET", ts.URL+api.PathStatus+"?resource=pool", "")
	var st api.StatusResponse
	if err := json.Unmarshal(body, &st); err != nil || code != 200 || st.Permits != 2 || len(st.Holders) != 2 {
		t.Fatalf("status = %d %s, want permits 2 and two holders", code, body)
	}
	for _, tok := range []uint64{a.FencingToken, b.FencingToken} {
		code, body := do(t, "GET", fmt.Sprintf("%s%s?resource=pool&token=%d", ts.URL, api.PathValidate, tok), "")
		var v api.ValidateResponse
		if err := json.Unmarshal(body, &v); err != nil || code != 200 || !v.Valid || v.HolderTokenMax != b.FencingToken {
			t.Errorf("validate #%d = %d %s, want valid, max #%d", tok, code, body, b.FencingToken)
		}
	}
	code, body = do(t, "GET", ts.URL+api.PathStatus+"?resource=plain", "")
	var plain api.StatusResponse
	if err := json.Unmarshal(body, &plain); err != nil || code != 200 || plain.Permits != 0 {
		t.Fatalf("status of a free resource = %d %s, want no permits", code, body)
	}
}

// TestThroughputRacerTakesAFreedPermit: goal — a throughput-policy
// acquire waiting on a full semaphore is woken by one permit freeing
// (the semaphore still has a holder), not only when all are free: it is
// granted long before its wait ends.
func TestThroughputRacerTakesAFreedPermit(t *testing.T) {
	ts, _ := newServer(t)
	grant := func(client string) api.AcquireResponse {
		t.Helper()
		code, b := do(t, "POST", ts.URL+api.PathAcquire, fmt.Sprintf(`{"resource":"pool","client_id":%q,"ttl":60000,"permits":2}`, client))
		var out api.AcquireResponse
		if err := json.Unmarshal(b, &out); err != nil || code != 200 || !out.Granted {
			t.Fatalf("acquire %s = %d %s", client, code, b)
		}
		return out
	}
	a := grant("a")
	grant("b")
	type reply struct {
		code int
		out  api.AcquireResponse
		took time.Duration
	}
	done := make(chan reply, 1)
	go func() {
		start := time.Now()
		code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"pool","client_id":"c","ttl":60000,"permits":2,"wait":20000,"policy":"throughput"}`)
		var out api.AcquireResponse
		_ = json.Unmarshal(b, &out)
		done <- reply{code, out, time.Since(start)}
	}()
	time.Sleep(200 * time.Millisecond)
	if code, b := do(t, "POST", ts.URL+api.PathRelease, `{"resource":"pool","lease_id":"`+a.LeaseID+`"}`); code != 200 {
		t.Fatalf("release a = %d %s", code, b)
	}
	r := <-done
	if r.code != 200 || !r.out.Granted || r.took > 10*time.Second {
		t.Fatalf("racer: %d %+v after %v, want granted well within its 20 s wait", r.code, r.out, r.took)
	}
}
