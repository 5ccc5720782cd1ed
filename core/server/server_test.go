package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/node/nodetest"
	"github.com/lockstep/lockstep/core/server"
	"github.com/lockstep/lockstep/core/service"
	"github.com/lockstep/lockstep/core/shard"
)

func newServer(t *testing.T) (*httptest.Server, *nodetest.Cluster) {
	t.Helper()
	c := nodetest.New(t, 1, nil)
	ts := httptest.NewServer(front(t, shard.Single(c.Nodes[0]), service.Config{}, server.Config{}).Handler())
	t.Cleanup(ts.Close)
	return ts, c
}

func do(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestBadInputIsRejectedWithoutChange: goal — every malformed request gets
// 400 invalid_argument with a message and leaves the state untouched.
// Method: a table of bad bodies; compare the encoded state before and after.
func TestBadInputIsRejectedWithoutChange(t *testing.T) {
	ts, c := newServer(t)
	if code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"held","client_id":"a","ttl":60000}`); code != 200 {
		t.Fatalf("warm-up acquire: %d %s", code, b)
	}
	// The node writes entries of its own at start (its hello): wait until
	// the state stops moving before taking the reference.
	before := c.Nodes[0].Snapshot()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		now := c.Nodes[0].Snapshot()
		if bytes.Equal(before, now) {
			break
		}
		before = now
	}
	huge := `{"resource":"` + strings.Repeat("x", 70<<10) + `","client_id":"a","ttl":1000}`
	cases := []struct{ name, path, body string }{
		{"malformed json", api.PathAcquire, `{"resource":`},
		{"not an object", api.PathAcquire, `[1,2]`},
		{"empty body", api.PathAcquire, ``},
		{"trailing data", api.PathAcquire, `{"resource":"r","client_id":"a","ttl":1000} {}`},
		{"unknown field", api.PathAcquire, `{"resource":"r","client_id":"a","ttl":1000,"color":"red"}`},
		{"missing resource", api.PathAcquire, `{"client_id":"a","ttl":1000}`},
		{"missing client", api.PathAcquire, `{"resource":"r","ttl":1000}`},
		{"zero ttl", api.PathAcquire, `{"resource":"r","client_id":"a","ttl":0}`},
		{"negative ttl", api.PathAcquire, `{"resource":"r","client_id":"a","ttl":-5}`},
		{"ttl above max", api.PathAcquire, `{"resource":"r","client_id":"a","ttl":600001}`},
		{"unknown mode", api.PathAcquire, `{"resource":"r","client_id":"a","ttl":1000,"mode":"sideways"}`},
		{"unknown policy", api.PathAcquire, `{"resource":"r","client_id":"a","ttl":1000,"policy":"lottery"}`},
		{"negative wait", api.PathAcquire, `{"resource":"r","client_id":"a","ttl":1000,"wait":-1}`},
		{"resource too long", api.PathAcquire, `{"resource":"` + strings.Repeat("r", 257) + `","client_id":"a","ttl":1000}`},
		{"oversized body", api.PathAcquire, huge},
		{"wrong type", api.PathAcquire, `{"resource":"r","client_id":"a","ttl":"soon"}`},
		{"release bad lease id", api.PathRelease, `{"resource":"held","lease_id":"nope"}`},
		{"release missing resource", api.PathRelease, `{"lease_id":"00112233445566778899aabbccddeeff"}`},
		{"renew negative ttl", api.PathRenew, `{"resource":"held","lease_id":"00112233445566778899aabbccddeeff","ttl":-1}`},
		{"renew ttl above max", api.PathRenew, `{"resource":"held","lease_id":"00112233445566778899aabbccddeeff","ttl":900000}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, b := do(t, "POST", ts.URL+tc.path, tc.body)
			var e api.Error
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("body %q is not a JSON error: %v", b, err)
			}
			if code != 400 || e.Code != api.CodeInvalidArgument || e.Error == "" {
				t.Fatalf("got %d %+v, want 400 invalid_argument with a message", code, e)
			}
		})
	}
	if code, _ := do(t, "GET", ts.URL+api.PathStatus, ""); code != 400 {
		t.Fatalf("status without resource: %d, want 400", code)
	}
	if after := c.Nodes[0].Snapshot(); !bytes.Equal(before, after) {
		t.Fatal("bad input changed the state")
	}
}

// TestRoutingErrors: goal — unknown paths answer 404 and wrong methods 405,
// both as JSON errors.
func TestRoutingErrors(t *testing.T) {
	ts, _ := newServer(t)
	for _, tc := range []struct {
		method, path string
		want         int
		code         api.Code
	}{
		{"GET", "/nope", 404, api.CodeNotFound},
		{"GET", api.PathAcquire, 405, api.CodeMethodNotAllowed},
		{"POST", api.PathStatus, 405, api.CodeMethodNotAllowed},
		{"DELETE", api.PathRelease, 405, api.CodeMethodNotAllowed},
	} {
		code, b := do(t, tc.method, ts.URL+tc.path, "")
		var e api.Error
		_ = json.Unmarshal(b, &e)
		if code != tc.want || e.Code != tc.code {
			t.Errorf("%s %s = %d %s, want %d %s", tc.method, tc.path, code, b, tc.want, tc.code)
		}
	}
}

// TestLockLifecycle: goal — the happy path and the 409s of the contract.
// Method: acquire, refused try-lock, status, renew, release, then renew and
// release of the dead lease (409 not_holder, never resurrected).
func TestLockLifecycle(t *testing.T) {
	ts, _ := newServer(t)
	var got api.AcquireResponse
	code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"r","client_id":"a","ttl":5000,"mode":"shared"}`)
	if err := json.Unmarshal(b, &got); err != nil || code != 200 || !got.Granted || got.Mode != api.Shared ||
		got.ExpiresInMs != 5000 || got.FencingToken == 0 || len(got.LeaseID) != 32 {
		t.Fatalf("acquire = %d %s", code, b)
	}
	code, b = do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"r","client_id":"b","ttl":5000}`)
	if code != 200 || !strings.Contains(string(b), `"granted":false`) {
		t.Fatalf("exclusive try-lock over a shared holder = %d %s, want refused", code, b)
	}
	code, b = do(t, "GET", ts.URL+api.PathStatus+"?resource=r", "")
	var st api.StatusResponse
	if err := json.Unmarshal(b, &st); err != nil || code != 200 || len(st.Holders) != 1 || st.Holders[0].LeaseFingerprint != api.LeaseFingerprint(got.LeaseID) {
		t.Fatalf("status = %d %s", code, b)
	}
	code, b = do(t, "POST", ts.URL+api.PathRenew, `{"resource":"r","lease_id":"`+got.LeaseID+`","ttl":9000}`)
	var rn api.RenewResponse
	if err := json.Unmarshal(b, &rn); err != nil || code != 200 || rn.ExpiresInMs != 9000 || rn.FencingToken != got.FencingToken {
		t.Fatalf("renew = %d %s", code, b)
	}
	if code, b = do(t, "POST", ts.URL+api.PathRelease, `{"resource":"r","lease_id":"`+got.LeaseID+`"}`); code != 200 {
		t.Fatalf("release = %d %s", code, b)
	}
	for _, path := range []string{api.PathRelease, api.PathRenew} {
		code, b = do(t, "POST", ts.URL+path, `{"resource":"r","lease_id":"`+got.LeaseID+`"}`)
		var e api.Error
		_ = json.Unmarshal(b, &e)
		if code != 409 || e.Code != api.CodeNotHolder {
			t.Fatalf("%s of a released lease = %d %s, want 409 not_holder", path, code, b)
		}
	}
}

// TestClusterHealthMetrics: goal — the operational endpoints answer with
// the documented fields. Method: read each after one request.
func TestClusterHealthMetrics(t *testing.T) {
	ts, _ := newServer(t)
	do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"r","client_id":"a","ttl":5000}`)
	code, b := do(t, "GET", ts.URL+api.PathCluster, "")
	var cl api.ClusterResponse
	if err := json.Unmarshal(b, &cl); err != nil || code != 200 || cl.Leader != "n1" || len(cl.Nodes) != 1 || cl.Nodes[0].State != "leader" {
		t.Fatalf("cluster = %d %s", code, b)
	}
	if code, b = do(t, "GET", ts.URL+api.PathHealth, ""); code != 200 || !strings.Contains(string(b), `"status":"ok"`) {
		t.Fatalf("healthz = %d %s", code, b)
	}
	code, b = do(t, "GET", ts.URL+api.PathMetrics, "")
	for _, want := range []string{
		`lockstep_requests_total{op="acquire",result="ok"} 1`,
		"lockstep_request_duration_seconds_bucket", `lockstep_active_leases{shard="1"} 1`, `lockstep_queue_depth{shard="1"} 0`,
		"lockstep_expirations_total", `lockstep_raft_leader{shard="1"} 1`, "lockstep_raft_term", "lockstep_raft_commit_index",
	} {
		if code != 200 || !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
