package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/shardmap"
)

// mapMember is a fake member of a one-shard cluster: /cluster shows its map
// (version and the shard's leader), and every reply carries the version
// (status replies say claimed instead when it is set).
type mapMember struct {
	srv      *httptest.Server
	mu       sync.Mutex
	version  uint64
	claimed  uint64
	leader   string // host:port of the shard's leader
	statuses int
	fetches  int
}

func newMapMember(t *testing.T) *mapMember {
	m := &mapMember{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		version, leader := m.version, m.leader
		switch {
		case r.URL.Path == api.PathCluster:
			m.fetches++
		case m.claimed != 0:
			version = m.claimed
			m.statuses++
		default:
			m.statuses++
		}
		m.mu.Unlock()
		api.SetMapVersion(w.Header(), version)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case api.PathCluster:
			_ = json.NewEncoder(w).Encode(api.ClusterResponse{MapVersion: version,
				Shards: []api.Shard{{ID: 1, Leader: leader, LeaderHTTP: leader, Term: 1}}})
		case api.PathStatus:
			_ = json.NewEncoder(w).Encode(api.StatusResponse{Resource: r.URL.Query().Get("resource")})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *mapMember) addr() string { return m.srv.Listener.Addr().String() }

func (m *mapMember) set(version uint64, leader *mapMember) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.version, m.leader = version, leader.addr()
}

// counts returns the status calls and map fetches m has answered.
func (m *mapMember) counts() (statuses, fetches int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.statuses, m.fetches
}

func (m *mapMember) statusCalls() int {
	n, _ := m.counts()
	return n
}

// routedClient returns a client of the endpoint m with the map fetched,
// and a context for the test's calls.
func routedClient(t *testing.T, m *mapMember) (*Client, context.Context) {
	c, err := New(Config{Endpoints: []string{m.srv.URL}, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	if err := c.routes.Refresh(ctx, c.routes.Generation()); err != nil {
		t.Fatal(err)
	}
	return c, ctx
}

// TestClientRefreshesOnNewerMapVersion: goal — a client holding an old
// shard map fetches it again on the first reply that names a newer
// version (not when the map has aged), asking the member that named it
// first, since the configured endpoints may not have it yet; it then
// routes by the new map. Method: fake members; the configured endpoint a
// stays at version 1 (leader b); b moves to version 2 (leader c); one
// status call goes to b, and no further call is made until the map is
// version 2; the next call must reach c.
func TestClientRefreshesOnNewerMapVersion(t *testing.T) {
	a, b, cm := newMapMember(t), newMapMember(t), newMapMember(t)
	a.set(1, b)
	b.set(1, b)
	c, ctx := routedClient(t, a)
	if m := c.routes.Map(); m == nil || m.Version != 1 || m.Leaders[0] != b.srv.URL {
		t.Fatalf("initial map %+v, want version 1 led by %s", m, b.srv.URL)
	}

	b.set(2, cm)
	if _, err := c.Status(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if b.statusCalls() != 1 {
		t.Fatalf("status went to %d/%d/%d of a/b/c, want b", a.statusCalls(), b.statusCalls(), cm.statusCalls())
	}
	for m := c.routes.Map(); m.Version != 2; m = c.routes.Map() {
		if ctx.Err() != nil {
			t.Fatalf("client still routes by map version %d after a reply named 2", m.Version)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.Status(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if cm.statusCalls() != 1 {
		t.Fatalf("status after the refresh went to %d/%d/%d of a/b/c, want c", a.statusCalls(), b.statusCalls(), cm.statusCalls())
	}
}

// TestClientAsksForAVersionOncePerGap: goal — replies naming a newer map
// version that no member shows yet start at most one fetch per map gap,
// not one per reply. Method: the only member's status replies say version
// 2 while its /cluster stays at 1; 30 status calls; the fetches they cause
// are bounded by the time they took.
func TestClientAsksForAVersionOncePerGap(t *testing.T) {
	a := newMapMember(t)
	a.set(1, a)
	c, ctx := routedClient(t, a)
	a.mu.Lock()
	a.claimed = 2
	a.mu.Unlock()
	_, before := a.counts()
	start := time.Now()
	for range 30 {
		if _, err := c.Status(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // let a started fetch run
	}
	took := time.Since(start)
	// One fetch per gap, plus one in flight at each end.
	limit := 2 + int(took/shardmap.DefaultConfig().Gap)
	if _, after := a.counts(); after-before < 1 || after-before > limit {
		t.Fatalf("30 replies naming version 2 in %v caused %d map fetches, want 1..%d", took, after-before, limit)
	}
}
