// Package nodetest starts in-process lock groups on raft's in-memory
// transport for tests. It works inside testing/synctest bubbles, where a
// 3-node election takes ~1.5 s of virtual time.
package nodetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/raftadapter"
)

// Cluster is a group of nodes wired with raft.InmemTransport and an
// in-process forwarder.
type Cluster struct {
	t      testing.TB
	mu     sync.Mutex
	Nodes  []*node.Node
	peers  []node.Peer
	trans  []*raft.InmemTransport
	stores []raftadapter.Stores
	tune   func(*node.Config)
}

// New starts n nodes and waits for a leader.
func New(t testing.TB, n int, tune func(*node.Config)) *Cluster {
	t.Helper()
	c := &Cluster{t: t, tune: tune}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i+1)
		c.peers = append(c.peers, node.Peer{ID: id, RaftAddr: id})
		_, tr := raft.NewInmemTransport(raft.ServerAddress(id))
		c.trans = append(c.trans, tr)
		c.stores = append(c.stores, raftadapter.NewMemStores())
	}
	for i := range c.trans {
		for j := range c.trans {
			if i != j {
				c.trans[i].Connect(raft.ServerAddress(c.peers[j].ID), c.trans[j])
			}
		}
	}
	c.Nodes = make([]*node.Node, n)
	for i := range c.Nodes {
		c.Start(i)
	}
	t.Cleanup(c.Shutdown)
	c.Leader()
	return c
}

// Start (re)starts node i on its existing stores.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	cfg := node.Config{
		ID: c.peers[i].ID, Peers: c.peers, Clock: node.NewMonotonicClock(), Bootstrap: true,
		Transport: c.trans[i], Stores: c.stores[i], Forwarder: forwarder{c},
		HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		LeaderLeaseTimeout: 100 * time.Millisecond,
	}
	if c.tune != nil {
		c.tune(&cfg)
	}
	n, err := node.New(cfg)
	if err != nil {
		c.t.Fatalf("start %s: %v", cfg.ID, err)
	}
	c.mu.Lock()
	c.Nodes[i] = n
	c.mu.Unlock()
}

// Stop shuts node i down (its stores survive for Start).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	n := c.Nodes[i]
	c.Nodes[i] = nil
	c.mu.Unlock()
	if n != nil {
		_ = n.Shutdown()
	}
	// A stopped InmemTransport cannot be reused; give the next start a fresh
	// one under the same address.
	_, tr := raft.NewInmemTransport(raft.ServerAddress(c.peers[i].ID))
	for j := range c.trans {
		if j != i {
			c.trans[j].Disconnect(raft.ServerAddress(c.peers[i].ID))
			c.trans[j].Connect(raft.ServerAddress(c.peers[i].ID), tr)
			tr.Connect(raft.ServerAddress(c.peers[j].ID), c.trans[j])
		}
	}
	c.trans[i] = tr
}

// Isolate cuts node i off from the others in both directions (it keeps
// running); Rejoin connects it again.
func (c *Cluster) Isolate(i int) {
	for j := range c.trans {
		if j != i {
			c.trans[i].Disconnect(raft.ServerAddress(c.peers[j].ID))
			c.trans[j].Disconnect(raft.ServerAddress(c.peers[i].ID))
		}
	}
}

// Rejoin undoes Isolate.
func (c *Cluster) Rejoin(i int) {
	for j := range c.trans {
		if j != i {
			c.trans[i].Connect(raft.ServerAddress(c.peers[j].ID), c.trans[j])
			c.trans[j].Connect(raft.ServerAddress(c.peers[i].ID), c.trans[i])
		}
	}
}

// Shutdown stops every node.
func (c *Cluster) Shutdown() {
	for i := range c.Nodes {
		c.mu.Lock()
		n := c.Nodes[i]
		c.Nodes[i] = nil
		c.mu.Unlock()
		if n != nil {
			_ = n.Shutdown()
		}
	}
}

// Leader waits (up to 10 s of the bubble's or the real clock) for a leader.
func (c *Cluster) Leader() int {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for i, n := range c.Nodes {
			if n != nil && n.IsLeader() {
				c.mu.Unlock()
				return i
			}
		}
		c.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no leader within 10s")
	return -1
}

// Follower returns the index of a running non-leader.
func (c *Cluster) Follower() int {
	lead := c.Leader()
	for i, n := range c.Nodes {
		if i != lead && n != nil {
			return i
		}
	}
	c.t.Fatal("no running follower")
	return -1
}

func (c *Cluster) byID(id string) *node.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range c.peers {
		if p.ID == id {
			return c.Nodes[i]
		}
	}
	return nil
}

// forwarder hands a command straight to the target node in-process.
type forwarder struct{ c *Cluster }

var (
	_ node.Forwarder   = forwarder{}
	_ node.ReadIndexer = forwarder{}
)

func (f forwarder) Forward(ctx context.Context, leader node.Peer, cmd []byte) ([]byte, error) {
	n := f.c.byID(leader.ID)
	if n == nil {
		return nil, fmt.Errorf("%w: %s is down", node.ErrUnavailable, leader.ID)
	}
	return n.ServeForward(ctx, cmd)
}

// ReadIndex asks the target node in-process (node.ReadIndexer).
func (f forwarder) ReadIndex(_ context.Context, leader node.Peer) (node.ReadIndex, error) {
	n := f.c.byID(leader.ID)
	if n == nil {
		return node.ReadIndex{}, fmt.Errorf("%w: %s is down", node.ErrUnavailable, leader.ID)
	}
	return n.ServeReadIndex()
}

// Acquire is a shorthand for tests: exclusive, FIFO, on node i.
func (c *Cluster) Acquire(ctx context.Context, i int, resource, client string, ttl, wait time.Duration) (lock.Result, error) {
	return c.Nodes[i].Acquire(ctx, lock.Command{
		Resource: resource, ClientID: client, Mode: lock.Exclusive,
		TTLMs: ttl.Milliseconds(), WaitMs: wait.Milliseconds(),
	})
}
