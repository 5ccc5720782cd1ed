package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/node/nodetest"
	"github.com/lockstep/lockstep/core/server"
	"github.com/lockstep/lockstep/core/service"
	"github.com/lockstep/lockstep/core/shard"
)

// clusterNode is one entry of GET /cluster, read loosely so the test does
// not depend on the Go types it checks.
type clusterNode struct {
	ID            string   `json:"id"`
	State         string   `json:"state"`
	LastContactMs *float64 `json:"last_contact_ms"`
}

type clusterReply struct {
	Leader string        `json:"leader"`
	View   string        `json:"view"`
	Nodes  []clusterNode `json:"nodes"`
}

func getCluster(t *testing.T, base string) clusterReply {
	t.Helper()
	code, b := do(t, "GET", base+"/cluster", "")
	var cr clusterReply
	if err := json.Unmarshal(b, &cr); err != nil || code != 200 {
		t.Fatalf("cluster = %d %s", code, b)
	}
	return cr
}

func (cr clusterReply) node(id string) clusterNode {
	for _, n := range cr.Nodes {
		if n.ID == id {
			return n
		}
	}
	return clusterNode{}
}

// httpCluster starts a 3-node group whose members know each other's HTTP
// addresses (nodetest peers have none), each served by its own server.
func httpCluster(t *testing.T, tune func(*node.Config)) (*nodetest.Cluster, []*httptest.Server) {
	t.Helper()
	handlers := make([]atomic.Pointer[http.Handler], 3)
	servers := make([]*httptest.Server, 3)
	peers := make([]node.Peer, 3)
	for i := range servers {
		servers[i] = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := handlers[i].Load(); h != nil {
				(*h).ServeHTTP(w, r)
				return
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		id := fmt.Sprintf("n%d", i+1)
		peers[i] = node.Peer{ID: id, RaftAddr: id, HTTPAddr: servers[i].Listener.Addr().String()}
		servers[i].Start()
		t.Cleanup(servers[i].Close)
	}
	c := nodetest.New(t, 3, func(cfg *node.Config) {
		cfg.Peers = peers
		if tune != nil {
			tune(cfg)
		}
	})
	for i, n := range c.Nodes {
		h := front(t, shard.Single(n), service.Config{}, server.Config{}).Handler()
		handlers[i].Store(&h)
	}
	return c, servers
}

// TestClusterMarksStoppedMemberUnreachable: goal — GET /cluster must not
// call a dead member a follower: on the leader, a member it has failed to
// reach for longer than UnreachableAfter is "unreachable", with how long ago
// the leader last reached it. Method: stop one follower of a 3-node group
// and poll the leader's /cluster until the member is unreachable; check the
// live follower's last_contact_ms.
func TestClusterMarksStoppedMemberUnreachable(t *testing.T) {
	const after = 300 * time.Millisecond
	c := nodetest.New(t, 3, func(cfg *node.Config) { cfg.UnreachableAfter = after })
	lead := c.Leader()
	stopped := (lead + 1) % 3
	live := (lead + 2) % 3
	stoppedID, liveID := c.Nodes[stopped].ID(), c.Nodes[live].ID()
	ts := httptest.NewServer(front(t, shard.Single(c.Nodes[lead]), service.Config{}, server.Config{}).Handler())
	defer ts.Close()
	c.Stop(stopped)
	var cr clusterReply
	waitUntil(t, "stopped member reported unreachable", func() bool {
		cr = getCluster(t, ts.URL)
		return cr.node(stoppedID).State == "unreachable"
	})
	if lc := cr.node(stoppedID).LastContactMs; lc == nil || *lc < float64(after.Milliseconds()) {
		t.Fatalf("unreachable member's last_contact_ms = %v, want >= %d: %+v", lc, after.Milliseconds(), cr)
	}
	if n := cr.node(liveID); n.State != "follower" || n.LastContactMs == nil {
		t.Fatalf("live follower = %+v, want follower with last_contact_ms", n)
	}
	if cr.View != "leader" {
		t.Fatalf("view = %q, want leader", cr.View)
	}
}

// TestFollowerClusterShowsLeadersView: goal — a follower's /cluster is as
// truthful as the leader's: it fetches the leader's view over the leader's
// HTTP address. Method: members that know each other's HTTP addresses; stop
// one follower and poll the other follower's /cluster until the stopped
// member is unreachable.
func TestFollowerClusterShowsLeadersView(t *testing.T) {
	c, servers := httpCluster(t, func(cfg *node.Config) { cfg.UnreachableAfter = 300 * time.Millisecond })
	lead := c.Leader()
	stopped, asked := (lead+1)%3, (lead+2)%3
	stoppedID := c.Nodes[stopped].ID()
	c.Stop(stopped)
	waitUntil(t, "follower reports the leader's view", func() bool {
		cr := getCluster(t, servers[asked].URL)
		return cr.View == "leader" && cr.node(stoppedID).State == "unreachable"
	})
}

// TestFollowerClusterWithoutLeaderAddressSaysUnknown: goal — when a
// follower cannot ask the leader (no HTTP address known), it reports the
// roles it cannot know as "unknown" rather than guessing "follower".
// Method: nodetest peers have no HTTP address; stop one follower and ask
// the other.
func TestFollowerClusterWithoutLeaderAddressSaysUnknown(t *testing.T) {
	c := nodetest.New(t, 3, nil)
	lead := c.Leader()
	stopped, asked := (lead+1)%3, (lead+2)%3
	stoppedID, askedID, leadID := c.Nodes[stopped].ID(), c.Nodes[asked].ID(), c.Nodes[lead].ID()
	ts := httptest.NewServer(front(t, shard.Single(c.Nodes[asked]), service.Config{}, server.Config{}).Handler())
	defer ts.Close()
	c.Stop(stopped)
	cr := getCluster(t, ts.URL)
	if cr.View != "local" || cr.node(stoppedID).State != "unknown" || cr.node(askedID).State != "follower" ||
		cr.node(leadID).State != "leader" {
		t.Fatalf("follower's local view = %+v, want view local, self follower, leader leader, other unknown", cr)
	}
	if cr.node(stoppedID).LastContactMs != nil {
		t.Fatalf("a follower cannot know the leader's contact times: %+v", cr)
	}
}
