package server_test

import (
	"encoding/json"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// TestReusedRequestIDIsRefused: goal — a request id reused with another
// request body never reports a lock nobody holds, and a retry whose lease
// ended says so. Method: the two probes that found the defect, over HTTP:
// the same (client_id, request_id) for X1 then Y1 (409 request_id_reused,
// Y1 stays free); acquire, release, retry (409 lease_ended with the token).
func TestReusedRequestIDIsRefused(t *testing.T) {
	ts, _ := newServer(t)
	code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"X1","client_id":"wx","request_id":"same","ttl":30000}`)
	if code != 200 {
		t.Fatalf("first acquire = %d %s", code, b)
	}
	code, b = do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"Y1","client_id":"wx","request_id":"same","ttl":30000}`)
	var e api.Error
	if json.Unmarshal(b, &e) != nil || code != 409 || e.Code != api.CodeRequestIDReused {
		t.Fatalf("same request id for another resource = %d %s, want 409 request_id_reused", code, b)
	}
	code, b = do(t, "GET", ts.URL+api.PathStatus+"?resource=Y1", "")
	var st api.StatusResponse
	if json.Unmarshal(b, &st) != nil || code != 200 || len(st.Holders) != 0 {
		t.Fatalf("status Y1 = %d %s, want no holder", code, b)
	}

	code, b = do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"R","client_id":"wx","request_id":"fixed","ttl":30000}`)
	var got api.AcquireResponse
	if json.Unmarshal(b, &got) != nil || code != 200 || !got.Granted {
		t.Fatalf("acquire = %d %s", code, b)
	}
	if code, b = do(t, "POST", ts.URL+api.PathRelease, `{"resource":"R","lease_id":"`+got.LeaseID+`"}`); code != 200 {
		t.Fatalf("release = %d %s", code, b)
	}
	code, b = do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"R","client_id":"wx","request_id":"fixed","ttl":30000}`)
	e = api.Error{}
	if json.Unmarshal(b, &e) != nil || code != 409 || e.Code != api.CodeLeaseEnded || e.FencingToken != got.FencingToken {
		t.Fatalf("retry after release = %d %s, want 409 lease_ended with token %d", code, b, got.FencingToken)
	}
}
