package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/shardmap"
)

// versionedMember is a fake member leading its only shard: /cluster shows
// its map version, and every reply carries it in api.HeaderMapVersion
// (lock replies say claimed instead when it is set).
type versionedMember struct {
	srv          *httptest.Server
	mu           sync.Mutex
	version      uint64
	claimed      uint64
	clusterCalls int
}

func newVersionedMember(t *testing.T, version uint64) *versionedMember {
	m := &versionedMember{version: version}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		v := m.version
		if r.URL.Path == api.PathCluster {
			m.clusterCalls++
		} else if m.claimed != 0 {
			v = m.claimed
		}
		m.mu.Unlock()
		api.SetMapVersion(w.Header(), v)
		w.Header().Set("Content-Type", "application/json")
		self := m.srv.Listener.Addr().String()
		switch r.URL.Path {
		case api.PathCluster:
			_ = json.NewEncoder(w).Encode(api.ClusterResponse{MapVersion: v, Nodes: []api.Node{{ID: "n1", HTTPAddr: self}},
				Shards: []api.Shard{{ID: 1, Leader: "n1", LeaderHTTP: self, Term: 1}}})
		case api.PathAcquire:
			_ = json.NewEncoder(w).Encode(api.AcquireResponse{Granted: true, LeaseID: strings.Repeat("a", 32), FencingToken: 1})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// set moves the member to version; its lock replies say claimed instead
// when that is not 0.
func (m *versionedMember) set(version, claimed uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.version, m.claimed = version, claimed
}

func (m *versionedMember) fetches() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.clusterCalls
}

// acquireVia sends one acquire to base and returns the reply's map version
// header.
func acquireVia(t testing.TB, base string) string {
	t.Helper()
	resp, err := http.Post(base+api.PathAcquire, "application/json", strings.NewReader(`{"resource":"r","client_id":"c","ttl":1000}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("acquire through the gateway = %d", resp.StatusCode)
	}
	return resp.Header.Get(api.HeaderMapVersion)
}

// TestGatewayRefreshesOnNewerMapVersion: goal — a gateway holding an old
// shard map fetches the map again on the first member reply that names a
// newer version, not at its next periodic refresh, and relays the version
// to its client; replies at its own version cost no fetch. Method: a fake
// member at version 1, periodic refresh an hour away; acquires at version
// 1, then the member moves to version 2 and one acquire is sent.
func TestGatewayRefreshesOnNewerMapVersion(t *testing.T) {
	m := newVersionedMember(t, 1)
	g := startGateway(t, []string{m.srv.Listener.Addr().String()}, time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for cur := g.routes.Map(); cur == nil || cur.Version != 1; cur = g.routes.Map() {
		if time.Now().After(deadline) {
			t.Fatalf("no map at version 1: %+v", cur)
		}
		time.Sleep(10 * time.Millisecond)
	}
	base := "http://" + g.Addr()
	before := m.fetches()
	for range 3 {
		if got := acquireVia(t, base); got != "1" {
			t.Fatalf("relayed %s = %q, want 1", api.HeaderMapVersion, got)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if got := m.fetches(); got != before {
		t.Fatalf("replies at the gateway's own version caused %d map fetches", got-before)
	}

	m.set(2, 0)
	if got := acquireVia(t, base); got != "2" {
		t.Fatalf("relayed %s = %q, want 2", api.HeaderMapVersion, got)
	}
	deadline = time.Now().Add(10 * time.Second)
	for g.routes.Map().Version != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("gateway still routes by map version %d after a reply named 2", g.routes.Map().Version)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGatewayAsksForAVersionOncePerGap: goal — replies naming a newer
// version that no refresh can find (the member ahead does not show it yet)
// start at most one refresh per map gap, not one per reply. Method: lock
// replies say version 2 while /cluster stays at 1; 30 acquires; the
// fetches they cause are bounded by the time they took.
func TestGatewayAsksForAVersionOncePerGap(t *testing.T) {
	m := newVersionedMember(t, 1)
	g := startGateway(t, []string{m.srv.Listener.Addr().String()}, time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for g.routes.Map() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no map")
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.set(1, 2)
	base := "http://" + g.Addr()
	before := m.fetches()
	start := time.Now()
	for range 30 {
		acquireVia(t, base)
		time.Sleep(time.Millisecond) // let a started refresh run
	}
	took := time.Since(start)
	// One refresh per gap, plus one in flight at each end.
	limit := 2 + int(took/shardmap.DefaultConfig().Gap)
	if got := m.fetches() - before; got < 1 || got > limit {
		t.Fatalf("30 replies naming version 2 in %v caused %d map fetches, want 1..%d", took, got, limit)
	}
}
