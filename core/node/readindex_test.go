package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/node/nodetest"
)

// TestReadIndexComesFromTheLeader: goal — only a leader that still leads
// answers a read-index query, with the last command at or before its
// commit index, and a follower that catches up to it holds that command.
// Method: a 3-node group grants a lock; the leader's read index names the
// grant's entry; a follower refuses the query, catches up (asking the
// leader through its forwarder) and reports CaughtUp; then the leader, cut
// off from the others, must refuse instead of answering from its old view.
// core/forward tests the query's trip between members.
func TestReadIndexComesFromTheLeader(t *testing.T) {
	// A lease long enough that the isolated leader is still leader when
	// the check below gives up: only VerifyLeader can refuse the read.
	c := nodetest.New(t, 3, func(cfg *node.Config) {
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = time.Second, time.Second, time.Second
	})
	lead := c.Leader()
	follower := (lead + 1) % 3
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := c.Acquire(ctx, lead, "db", "A", time.Minute, 0)
	if err != nil || !res.Granted {
		t.Fatalf("acquire: %+v %v", res, err)
	}
	granted := c.Nodes[lead].Stats().Lock.LastIndex
	ri, err := c.Nodes[lead].ServeReadIndex()
	if err != nil {
		t.Fatalf("leader's read index: %v", err)
	}
	if ri.Command < granted || ri.Command > ri.Commit {
		t.Fatalf("read index %+v, want command >= %d (the grant) and <= commit", ri, granted)
	}
	if _, err := c.Nodes[follower].ServeReadIndex(); !errors.Is(err, node.ErrNotLeader) {
		t.Fatalf("follower's read index: %v, want ErrNotLeader", err)
	}

	if c.Nodes[follower].CaughtUp() {
		t.Fatal("follower caught up before any read index")
	}
	caught, err := c.Nodes[follower].CatchUp(ctx)
	if err != nil || caught.Command < ri.Command {
		t.Fatalf("follower's catch-up = %+v %v, want command >= %d", caught, err, ri.Command)
	}
	if !c.Nodes[follower].CaughtUp() || c.Nodes[follower].Stats().Lock.LastIndex < granted {
		t.Fatalf("follower after catch-up: caught up %v, last command %d, want true and >= %d",
			c.Nodes[follower].CaughtUp(), c.Nodes[follower].Stats().Lock.LastIndex, granted)
	}

	// A heartbeat already on its way when the link was cut may still
	// confirm one read (the follower acknowledged it after the read
	// began, so that answer is sound); once those are in, none may.
	c.Isolate(lead)
	deadline := time.Now().Add(300 * time.Millisecond)
	for {
		got, err := c.Nodes[lead].ServeReadIndex()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("isolated leader still answers read index %+v after 300 ms", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
