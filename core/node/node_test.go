package node_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/node/nodetest"
)

// TestExpiryGrantsWaiter: goal — a lease nobody renews is freed by the
// leader's tick and the queue head is granted without any other command.
// Method: holder with 1 s TTL, a waiter blocked on a follower; virtual time.
func TestExpiryGrantsWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		ctx := context.Background()
		held, err := c.Acquire(ctx, c.Leader(), "r", "A", time.Second, 0)
		if err != nil || !held.Granted {
			t.Fatalf("acquire: %v %+v", err, held)
		}
		start := time.Now()
		got, err := c.Acquire(ctx, c.Follower(), "r", "B", 10*time.Second, 5*time.Second)
		if err != nil || !got.Granted {
			t.Fatalf("waiter: %v %+v", err, got)
		}
		waited := time.Since(start)
		if waited < 900*time.Millisecond || waited > 1500*time.Millisecond {
			t.Fatalf("waiter granted after %v, want about the 1 s TTL", waited)
		}
		if got.Lease.Token <= held.Lease.Token {
			t.Fatalf("token %d not above %d", got.Lease.Token, held.Lease.Token)
		}
	})
}

// TestWaitElapsedLeavesQueue: goal — a wait that elapses removes the queue
// entry through the log and reports the position. Method: holder with a long
// TTL, waiter with 300 ms wait, then a linearizable status.
func TestWaitElapsedLeavesQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		ctx := context.Background()
		if _, err := c.Acquire(ctx, 0, "r", "A", time.Minute, 0); err != nil {
			t.Fatal(err)
		}
		got, err := c.Acquire(ctx, 1, "r", "B", time.Minute, 300*time.Millisecond)
		if err != nil || got.Granted || got.Position != 1 {
			t.Fatalf("waiter = %+v, %v; want refused at position 1", got, err)
		}
		st, err := c.Nodes[2].Status(ctx, "r")
		if err != nil || len(st.Status.Queue) != 0 || len(st.Status.Holders) != 1 {
			t.Fatalf("status = %+v, %v; want one holder, empty queue", st.Status, err)
		}
	})
}

// TestCancelledCallerLeavesQueue: goal — context cancellation removes a
// queued request so it is never granted to a caller who left. Method: cancel
// a blocked waiter, release the lock, and check nobody holds it.
func TestCancelledCallerLeavesQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		bg := context.Background()
		held, err := c.Acquire(bg, 0, "r", "A", time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		defer cancel()
		if _, err := c.Acquire(ctx, 1, "r", "B", time.Minute, 10*time.Second); !errors.Is(err, context.DeadlineExceeded) && err != nil {
			t.Fatalf("cancelled waiter: %v", err)
		}
		if _, err := c.Nodes[0].Release(bg, "r", held.Lease.ID); err != nil {
			t.Fatal(err)
		}
		st, err := c.Nodes[0].Status(bg, "r")
		if err != nil || len(st.Status.Holders) != 0 || len(st.Status.Queue) != 0 {
			t.Fatalf("status after release = %+v, %v; want free", st.Status, err)
		}
	})
}

// TestLeaderChangeKeepsRemainingTTL: goal — a leader change never shortens
// a lease. Method: grant a 2 s lease, stop the leader 1 s later, and check the
// lease is still held 0.9 s after the new leader's first entry.
func TestLeaderChangeKeepsRemainingTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		bg := context.Background()
		lead := c.Leader()
		held, err := c.Acquire(bg, lead, "r", "A", 2*time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		c.Stop(lead)
		newLead := c.Leader()
		if _, err := c.Nodes[newLead].Status(bg, "r"); err != nil { // first entry of the new term
			t.Fatal(err)
		}
		time.Sleep(900 * time.Millisecond)
		st, err := c.Nodes[newLead].Status(bg, "r")
		if err != nil || len(st.Status.Holders) != 1 || st.Status.Holders[0].ID != held.Lease.ID {
			t.Fatalf("lease lost early after leader change: %+v, %v", st.Status, err)
		}
		time.Sleep(2 * time.Second)
		st, err = c.Nodes[newLead].Status(bg, "r")
		if err != nil || len(st.Status.Holders) != 0 {
			t.Fatalf("lease not expired 2.9 s after the new leader began: %+v, %v", st.Status, err)
		}
	})
}

// TestThroughputPolicyRaces: goal — in throughput mode nothing is queued
// and a waiter still gets the lock once it frees. Method: hold, start a
// throughput waiter, check the queue is empty, release, expect the grant.
func TestThroughputPolicyRaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		bg := context.Background()
		held, err := c.Acquire(bg, 0, "r", "A", time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan lock.Result, 1)
		go func() {
			res, _ := c.Nodes[1].Acquire(bg, lock.Command{Resource: "r", ClientID: "B", Mode: lock.Exclusive,
				Policy: lock.Throughput, TTLMs: 1000, WaitMs: 5000})
			done <- res
		}()
		time.Sleep(100 * time.Millisecond)
		st, _ := c.Nodes[0].Status(bg, "r")
		if len(st.Status.Queue) != 0 {
			t.Fatalf("throughput waiter was queued: %+v", st.Status.Queue)
		}
		if _, err := c.Nodes[2].Release(bg, "r", held.Lease.ID); err != nil {
			t.Fatal(err)
		}
		if res := <-done; !res.Granted || res.Lease.Token <= held.Lease.Token {
			t.Fatalf("racer = %+v, want granted with a higher token", res)
		}
	})
}

// TestRetryWithRequestIDGrantsOnce: goal — a retried acquire (same client
// and request id, through another node) returns the original lease. Method:
// acquire twice with one request id and compare lease ids and tokens.
func TestRetryWithRequestIDGrantsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		bg := context.Background()
		cmd := lock.Command{Resource: "r", ClientID: "A", RequestID: "req-1", Mode: lock.Exclusive, TTLMs: 10_000}
		first, err := c.Nodes[0].Acquire(bg, cmd)
		if err != nil {
			t.Fatal(err)
		}
		second, err := c.Nodes[2].Acquire(bg, cmd)
		if err != nil {
			t.Fatal(err)
		}
		if !second.Granted || second.Lease.ID != first.Lease.ID || second.Lease.Token != first.Lease.Token {
			t.Fatalf("retry = %+v, want the first grant %+v", second.Lease, first.Lease)
		}
	})
}

// TestRestartedFollowerCatchesUpFromSnapshot: goal — a node restarted on its
// stores recovers and converges, including through a snapshot. Method: tiny
// snapshot threshold, many operations while one follower is down, then
// compare encoded states.
func TestRestartedFollowerCatchesUpFromSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, snapshotOften)
		bg := context.Background()
		f := c.Follower()
		c.Stop(f)
		lead := c.Leader()
		cycle(t, c, lead, 100)
		if _, err := c.Acquire(bg, lead, "kept", "A", time.Minute, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // let snapshots happen
		c.Start(f)
		deadline := time.Now().Add(10 * time.Second)
		for !bytes.Equal(c.Nodes[f].Snapshot(), c.Nodes[lead].Snapshot()) {
			if time.Now().After(deadline) {
				t.Fatal("restarted follower did not converge")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestProposeDepthUnderLoad: goal — with one entry in raft at a time (the
// most batching), concurrent acquires on the leader and through a follower
// are all granted with distinct tokens, and a node shut down while
// commands queue behind an entry in flight returns instead of hanging.
// Method: 3 nodes, 40 concurrent acquires of 40 resources, then 20 more
// with the leader shut down under them; virtual time.
func TestProposeDepthUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, func(cfg *node.Config) { cfg.ProposeDepth = 1 })
		ctx := context.Background()
		lead := c.Leader()
		var wg sync.WaitGroup
		var mu sync.Mutex
		tokens := map[uint64]bool{}
		for i := range 40 {
			at := lead
			if i%2 == 1 {
				at = (lead + 1) % 3
			}
			wg.Go(func() {
				res, err := c.Acquire(ctx, at, fmt.Sprintf("r%d", i), fmt.Sprintf("c%d", i), time.Minute, 0)
				mu.Lock()
				defer mu.Unlock()
				if err != nil || !res.Granted || tokens[res.Lease.Token] {
					t.Errorf("acquire %d: %+v, %v", i, res, err)
				}
				tokens[res.Lease.Token] = true
			})
		}
		wg.Wait()
		n := c.Nodes[lead]
		for i := range 20 {
			wg.Go(func() {
				_, _ = n.Acquire(ctx, lock.Command{Resource: fmt.Sprintf("s%d", i), ClientID: "late", Mode: lock.Exclusive, TTLMs: 60000})
			})
		}
		c.Stop(lead)
		wg.Wait()
	})
}
