package client

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/loopback"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/placement"
)

// hostRecorder is a RoundTripper that notes the host of every lock request.
type hostRecorder struct {
	mu    sync.Mutex
	hosts []string
}

func (h *hostRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasPrefix(req.URL.Path, "/lock/") {
		h.mu.Lock()
		h.hosts = append(h.hosts, req.URL.Host)
		h.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// take returns the hosts noted since the last take.
func (h *hostRecorder) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.hosts
	h.hosts = nil
	return out
}

// startShardedCluster starts 3 members with 3 lock shards on loopback and
// stops them with the test; leaders move only when the test moves them.
func startShardedCluster(t *testing.T) ([]node.Peer, []*lockd.Member) {
	t.Helper()
	var peers []node.Peer
	for i := range 3 {
		var addrs [2]string
		for j := range addrs {
			addr, err := loopback.Addr()
			if err != nil {
				t.Fatal(err)
			}
			addrs[j] = addr
		}
		peers = append(peers, node.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: addrs[0], HTTPAddr: addrs[1]})
	}
	members := make([]*lockd.Member, len(peers))
	dir := t.TempDir()
	for i, p := range peers {
		m, err := lockd.Start(lockd.Options{ID: p.ID, RaftAddr: p.RaftAddr, HTTPAddr: p.HTTPAddr,
			DataDir: filepath.Join(dir, p.ID), Peers: peers, Shards: 3, Bootstrap: true, Lock: lock.DefaultConfig(),
			Logger: slog.New(slog.DiscardHandler), SpreadInterval: -1})
		if err != nil {
			t.Fatalf("start %s: %v", p.ID, err)
		}
		members[i] = m
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = m.Stop(ctx)
		})
	}
	return peers, members
}

// shardLeader returns the index of the member leading shard s.
func shardLeader(members []*lockd.Member, s int, skip int) int {
	for i, m := range members {
		if i != skip && m.Shard(s) != nil && m.Shard(s).IsLeader() {
			return i
		}
	}
	return -1
}

// TestClientRoutesToShardLeaders: goal — with the shard map cached, the
// client sends each acquire and release straight to the leader of its
// resource's shard (no forward hop), and when that leader dies it still
// succeeds through the other endpoints. Method: a real 3-member, 3-shard
// cluster, a RoundTripper noting each lock request's host, one resource per
// shard; then the leader of shard 1 is stopped and its resource acquired
// again.
func TestClientRoutesToShardLeaders(t *testing.T) {
	peers, members := startShardedCluster(t)
	rec := &hostRecorder{}
	var endpoints []string
	for _, p := range peers {
		endpoints = append(endpoints, "http://"+p.HTTPAddr)
	}
	c, err := New(Config{Endpoints: endpoints, HTTPClient: &http.Client{Transport: rec}, BackoffBase: time.Millisecond,
		BackoffMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Wait until every shard has a leader and the map names all of them.
	for {
		_ = c.routes.Refresh(ctx, c.routes.Generation())
		m := c.routes.Map()
		if completeRoutes(c) && shardLeader(members, 1, -1) >= 0 && shardLeader(members, 2, -1) >= 0 && shardLeader(members, 3, -1) >= 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no complete shard map: %+v", m)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The first endpoint leads no shard, so only routing reaches leaders.
	for s := 1; s <= 3; s++ {
		if shardLeader(members, s, -1) == 0 {
			if err := members[0].Shard(s).TransferLeadership(peers[1]); err != nil {
				t.Fatalf("move shard %d's leader off the first endpoint: %v", s, err)
			}
		}
	}
	// The map must name the leaders as they are now: one fetched while a
	// transfer was under way may still name the first endpoint.
	for shardLeader(members, 1, 0) < 0 || shardLeader(members, 2, 0) < 0 || shardLeader(members, 3, 0) < 0 ||
		!currentRoutes(c, peers, members) {
		if ctx.Err() != nil {
			t.Fatal("leaders did not settle off the first endpoint")
		}
		time.Sleep(50 * time.Millisecond)
		_ = c.routes.Refresh(ctx, c.routes.Generation())
	}
	resources := map[int]string{}
	for i := 0; len(resources) < 3; i++ {
		name := fmt.Sprintf("route-%d", i)
		s := int(placement.Of(name, 3))
		if _, ok := resources[s]; !ok {
			resources[s] = name
		}
	}
	for s := 1; s <= 3; s++ {
		leader := peers[shardLeader(members, s, -1)].HTTPAddr
		rec.take()
		l, err := c.Acquire(ctx, resources[s], AcquireOptions{TTL: 10 * time.Second})
		if err != nil {
			t.Fatalf("shard %d: acquire: %v", s, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("shard %d: release: %v", s, err)
		}
		if hosts := rec.take(); len(hosts) != 2 || hosts[0] != leader || hosts[1] != leader {
			t.Errorf("shard %d: lock requests went to %v, want both to the leader %s", s, hosts, leader)
		}
	}

	dead := shardLeader(members, 1, -1)
	ctxStop, cancelStop := context.WithTimeout(ctx, 5*time.Second)
	_ = members[dead].Stop(ctxStop)
	cancelStop()
	l, err := c.Acquire(ctx, resources[1], AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("acquire after shard 1's leader stopped: %v", err)
	}
	_ = l.Release(ctx)
}

// completeRoutes tells whether c's map names a leader for each of 3 shards.
func completeRoutes(c *Client) bool {
	m := c.routes.Map()
	return m != nil && len(m.Leaders) == 3 && !slices.Contains(m.Leaders, "")
}

// currentRoutes tells whether c's map names each of 3 shards' leader as
// the members see it now.
func currentRoutes(c *Client, peers []node.Peer, members []*lockd.Member) bool {
	m := c.routes.Map()
	if m == nil || len(m.Leaders) != 3 {
		return false
	}
	for s := 1; s <= 3; s++ {
		i := shardLeader(members, s, -1)
		if i < 0 || m.Leaders[s-1] != "http://"+peers[i].HTTPAddr {
			return false
		}
	}
	return true
}
