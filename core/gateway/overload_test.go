package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// TestGatewayRetriesOverloadedElsewhere: goal — a member's 503 overloaded
// (refused before anything happened) is retried on another member, even
// for a request that is not safe to repeat, as a 503 unavailable is.
// Method: two fake members whose /cluster both name "busy" the shard's
// leader; busy answers every acquire 503 overloaded, idle grants it. An
// acquire without a request_id through the gateway must be granted, by
// idle, after busy refused it.
func TestGatewayRetriesOverloadedElsewhere(t *testing.T) {
	var busyCalls, idleCalls atomic.Int32
	var busyAddr string
	member := func(self *string, acquire func(w http.ResponseWriter)) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			switch r.URL.Path {
			case api.PathCluster:
				_ = json.NewEncoder(w).Encode(api.ClusterResponse{MapVersion: 1, Nodes: []api.Node{{ID: "busy", HTTPAddr: busyAddr}},
					Shards: []api.Shard{{ID: 1, Leader: "busy", LeaderHTTP: busyAddr, Term: 1}}})
			case api.PathAcquire:
				acquire(w)
			default:
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(srv.Close)
		if self != nil {
			*self = srv.Listener.Addr().String()
		}
		return srv
	}
	member(&busyAddr, func(w http.ResponseWriter) {
		busyCalls.Add(1)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(api.Error{Code: api.CodeOverloaded, Error: "overloaded: busy"})
	})
	idle := member(nil, func(w http.ResponseWriter) {
		idleCalls.Add(1)
		_ = json.NewEncoder(w).Encode(api.AcquireResponse{Granted: true, LeaseID: strings.Repeat("a", 32), FencingToken: 1, ExpiresInMs: 1000})
	})
	g := startGateway(t, []string{busyAddr, idle.Listener.Addr().String()}, time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for cur := g.routes.Map(); cur.Leader("r") != busyAddr; cur = g.routes.Map() {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway's map does not name busy the leader: %+v", cur)
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Post("http://"+g.Addr()+api.PathAcquire, "application/json",
		strings.NewReader(`{"resource":"r","client_id":"c","ttl":1000}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got api.AcquireResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK || !got.Granted {
		t.Fatalf("acquire through the gateway = %d %+v %v, want the grant from idle", resp.StatusCode, got, err)
	}
	if busyCalls.Load() == 0 || idleCalls.Load() != 1 {
		t.Fatalf("busy asked %d times, idle %d; want busy first, then idle once", busyCalls.Load(), idleCalls.Load())
	}
}
