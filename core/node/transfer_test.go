package node_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/node/nodetest"
)

// stallingTransport holds one kind of RPC to one member until released:
// replication (entries and snapshots, not heartbeats), so the member looks
// healthy while raft's replication goroutine for it is stuck, as when it
// installs a snapshot over a slow link or sleeps in raft's retry backoff;
// or TimeoutNow, as when the request or its answer is lost.
type stallingTransport struct {
	raft.Transport
	gate *stallGate
}

type stallGate struct {
	mu     sync.Mutex
	target raft.ServerAddress
	rpc    string // stallEntries or stallTimeoutNow
	open   chan struct{}
}

const (
	stallEntries    = "entries"
	stallTimeoutNow = "TimeoutNow"
)

func (g *stallGate) stall(target raft.ServerAddress, rpc string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.target, g.rpc, g.open = target, rpc, make(chan struct{})
}

func (g *stallGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open != nil {
		close(g.open)
		g.target, g.open = "", nil
	}
}

func (g *stallGate) wait(target raft.ServerAddress, rpc string) {
	g.mu.Lock()
	open := g.open
	stalled := open != nil && target == g.target && rpc == g.rpc
	g.mu.Unlock()
	if stalled {
		<-open
	}
}

func (t stallingTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

func (t stallingTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if len(args.Entries) > 0 {
		t.gate.wait(target, stallEntries)
	}
	return t.Transport.AppendEntries(id, target, args, resp)
}

func (t stallingTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	t.gate.wait(target, stallEntries)
	return t.Transport.InstallSnapshot(id, target, args, resp, data)
}

func (t stallingTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	t.gate.wait(target, stallTimeoutNow)
	return t.Transport.TimeoutNow(id, target, args, resp)
}

// stalledLeader starts three nodes on stalling transports sharing one gate
// (released when the test ends, then waited out) and holds rpc from the leader to one
// follower, the returned target.
func stalledLeader(t *testing.T, rpc string) (c *nodetest.Cluster, lead int, target node.Peer) {
	gate := &stallGate{}
	c = nodetest.New(t, 3, func(cfg *node.Config) {
		cfg.Transport = stallingTransport{Transport: cfg.Transport, gate: gate}
	})
	// Release, then outlive the held calls: a TimeoutNow that the node gave
	// up on finishes on the transport's own timeout (5 s of virtual time),
	// and a goroutine still blocked when the test ends fails the bubble.
	t.Cleanup(func() {
		gate.release()
		time.Sleep(6 * time.Second)
	})
	lead = c.Leader()
	target = c.Nodes[lead].Peers()[(lead+1)%3]
	gate.stall(raft.ServerAddress(target.RaftAddr), rpc)
	return c, lead, target
}

func (t stallingTransport) Close() error {
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// TestTransferRetryDoesNotStallTheGroup: goal — a leader whose transfer to
// a member timed out does not ask again in the same term, because
// hashicorp/raft would then refuse every new entry until the member's
// replication goroutine frees up (seconds: shardLeaderCrash's shard-latency
// failures, a shard applying nothing for 3.6 s after a restarted member
// was handed leadership). Method: stall the leader's replication of entries
// to one follower, transfer to it twice, then acquire on the leader; the
// acquire must apply while the replication is still stalled.
func TestTransferRetryDoesNotStallTheGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, lead, target := stalledLeader(t, stallEntries)
		ctx := context.Background()
		leader := c.Nodes[lead]
		other := leader.Peers()[(lead+2)%3]
		if res, err := c.Acquire(ctx, lead, "behind", "A", time.Minute, 0); err != nil || !res.Granted {
			t.Fatalf("acquire while one follower lags: %+v %v", res, err)
		}
		if err := leader.TransferLeadership(target); err == nil {
			t.Fatal("transfer to a member that cannot catch up succeeded")
		}
		if leader.CanTransferTo(target.ID) || !leader.CanTransferTo(other.ID) {
			t.Fatalf("after a failed transfer to %s: can transfer to it %v, to %s %v; want false, true",
				target.ID, leader.CanTransferTo(target.ID), other.ID, leader.CanTransferTo(other.ID))
		}
		time.Sleep(50 * time.Millisecond) // raft clears its transfer flag just after answering
		err := leader.TransferLeadership(target)
		if !errors.Is(err, node.ErrTransferPending) {
			t.Errorf("second transfer: %v, want ErrTransferPending", err)
		}
		time.Sleep(100 * time.Millisecond)
		res, err := c.Acquire(ctx, lead, "after", "B", time.Minute, 0)
		if err != nil || !res.Granted {
			t.Fatalf("acquire after the second transfer while the member still lags: %+v %v; the group stalls", res, err)
		}
	})
}

// TestLostTimeoutNowDoesNotStallTheGroup: goal — a leader whose transfer
// got no answer to its TimeoutNow takes new entries again once the transfer
// timed out, not only when the transport gives up on the RPC (5 s in lockd
// and the simulator: gatewaySharded's expiry failures, a shard applying
// nothing for 5 s after a TimeoutNow was dropped). Method: hold TimeoutNow
// to one follower, transfer to it, then acquire on the leader while the
// RPC is still held.
func TestLostTimeoutNowDoesNotStallTheGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, lead, target := stalledLeader(t, stallTimeoutNow)
		ctx := context.Background()
		leader := c.Nodes[lead]
		if err := leader.TransferLeadership(target); err == nil {
			t.Fatal("transfer without an answer to TimeoutNow succeeded")
		}
		time.Sleep(time.Second) // 5 election timeouts; the RPC is still held
		res, err := c.Acquire(ctx, lead, "after", "B", time.Minute, 0)
		if err != nil || !res.Granted {
			t.Fatalf("acquire while TimeoutNow is unanswered: %+v %v; the group stalls", res, err)
		}
	})
}

// TestAcquireDuringTransferWaitsForIt: goal — a request reaching the
// leader while it transfers leadership (raft takes no entries then) waits
// for the transfer's outcome like a request during an election, instead
// of failing at once (a client that keeps hitting the leader would use up
// its retries within the transfer: shardLeaderCrash's unserved acquires).
// Method: hold TimeoutNow so the transfer lasts one election timeout, and
// acquire on the leader in the middle of it.
func TestAcquireDuringTransferWaitsForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, lead, target := stalledLeader(t, stallTimeoutNow)
		leader := c.Nodes[lead]
		transferred := make(chan error, 1)
		go func() { transferred <- leader.TransferLeadership(target) }()
		time.Sleep(50 * time.Millisecond) // a quarter of the transfer's timeout
		res, err := c.Acquire(context.Background(), lead, "during", "A", time.Minute, 0)
		if err != nil || !res.Granted {
			t.Fatalf("acquire during a transfer: %+v %v, want granted once it ends", res, err)
		}
		if err := <-transferred; err == nil {
			t.Fatal("transfer without an answer to TimeoutNow succeeded")
		}
	})
}
