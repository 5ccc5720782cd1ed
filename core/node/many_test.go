package node_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node/nodetest"
)

func acquireMany(ctx context.Context, c *nodetest.Cluster, i int, client string, wait time.Duration, policy lock.Policy, resources ...string) (lock.Result, error) {
	return c.Nodes[i].AcquireMany(ctx, lock.Command{
		Resources: resources, ClientID: client, Mode: lock.Exclusive, Policy: policy,
		TTLMs: time.Minute.Milliseconds(), WaitMs: wait.Milliseconds(),
	})
}

// TestAcquireManyWaitsForAll: goal — a queued multi request on a follower
// is answered with every lease once the one resource that blocked it
// frees, and holds none of the others meanwhile. Method: A holds b; B asks
// for a, b, c with a wait; C's try-lock of a (free, but queued for B) is
// refused; A releases b; B gets three leases in request order.
func TestAcquireManyWaitsForAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		ctx := context.Background()
		held, err := c.Acquire(ctx, c.Leader(), "b", "A", time.Minute, 0)
		if err != nil || !held.Granted {
			t.Fatalf("acquire b: %v %+v", err, held)
		}
		type answer struct {
			res lock.Result
			err error
		}
		done := make(chan answer, 1)
		go func() {
			res, err := acquireMany(ctx, c, c.Follower(), "B", 10*time.Second, lock.FIFO, "a", "b", "c")
			done <- answer{res, err}
		}()
		time.Sleep(200 * time.Millisecond)
		if got, err := c.Acquire(ctx, c.Leader(), "a", "C", time.Minute, 0); err != nil || got.Granted {
			t.Fatalf("try-lock of a while B waits for a, b, c = %+v, %v; want refused", got, err)
		}
		if _, err := c.Nodes[c.Leader()].Release(ctx, "b", held.Lease.ID); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if got.err != nil || !got.res.Granted || len(got.res.Leases) != 3 {
			t.Fatalf("multi request = %+v, %v; want three leases", got.res, got.err)
		}
		base := got.res.Leases[0].ID
		if got.res.Lease != got.res.Leases[0] {
			t.Fatalf("Lease %+v is not Leases[0] %+v", got.res.Lease, got.res.Leases[0])
		}
		for j, l := range got.res.Leases {
			if l.ID != lock.ManyLeaseID(base, j) || l.Token <= held.Lease.Token {
				t.Fatalf("lease %d = %+v; want id %s and a token above %d", j, l, lock.ManyLeaseID(base, j), held.Lease.Token)
			}
		}
		for j, r := range []string{"a", "b", "c"} {
			st, err := c.Nodes[0].Status(ctx, r)
			if err != nil || len(st.Status.Holders) != 1 || st.Status.Holders[0].ID != got.res.Leases[j].ID {
				t.Fatalf("status %s = %+v, %v; want held by lease %d", r, st.Status, err, j)
			}
		}
	})
}

// TestAcquireManyWaitElapsedLeavesEveryQueue: goal — a multi request whose
// wait elapses leaves all of its queues in one cancel and reports where it
// stood. Method: A holds b; B waits 300 ms for a and b; afterwards no
// queue holds B and a is free.
func TestAcquireManyWaitElapsedLeavesEveryQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		ctx := context.Background()
		if _, err := c.Acquire(ctx, 0, "b", "A", time.Minute, 0); err != nil {
			t.Fatal(err)
		}
		got, err := acquireMany(ctx, c, 1, "B", 300*time.Millisecond, lock.FIFO, "a", "b")
		if err != nil || got.Granted || got.Position != 1 || len(got.Leases) != 0 {
			t.Fatalf("multi request = %+v, %v; want refused at position 1", got, err)
		}
		for _, r := range []string{"a", "b"} {
			st, err := c.Nodes[2].Status(ctx, r)
			if err != nil || len(st.Status.Queue) != 0 {
				t.Fatalf("status %s = %+v, %v; want an empty queue", r, st.Status, err)
			}
		}
		if got, err := c.Acquire(ctx, 2, "a", "C", time.Minute, 0); err != nil || !got.Granted {
			t.Fatalf("a after the multi request left = %+v, %v; want granted", got, err)
		}
	})
}

// TestAcquireManyCallerGoneHoldsNothing: goal — a multi request whose
// caller leaves is never granted to nobody. Method: cancel B's context
// while it waits for a and b, release b, then a and b must be free.
func TestAcquireManyCallerGoneHoldsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		bg := context.Background()
		held, err := c.Acquire(bg, 0, "b", "A", time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		defer cancel()
		if _, err := acquireMany(ctx, c, 1, "B", 10*time.Second, lock.FIFO, "a", "b"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancelled multi request: %v, want the context's error", err)
		}
		if _, err := c.Nodes[0].Release(bg, "b", held.Lease.ID); err != nil {
			t.Fatal(err)
		}
		for _, r := range []string{"a", "b"} {
			st, err := c.Nodes[2].Status(bg, r)
			if err != nil || len(st.Status.Holders) != 0 || len(st.Status.Queue) != 0 {
				t.Fatalf("status %s = %+v, %v; want free", r, st.Status, err)
			}
		}
	})
}

// TestAcquireManyThroughputRetriesOnFree: goal — in throughput policy a
// waiting multi request never queues and is granted when the resource that
// blocked it frees. Method: A holds b for 1 s (TTL); B asks for a and b
// with a 5 s wait; meanwhile a stays free for others.
func TestAcquireManyThroughputRetriesOnFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		ctx := context.Background()
		if _, err := c.Acquire(ctx, 0, "b", "A", time.Second, 0); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got, err := acquireMany(ctx, c, 1, "B", 5*time.Second, lock.Throughput, "a", "b")
		if err != nil || !got.Granted || len(got.Leases) != 2 {
			t.Fatalf("multi request = %+v, %v; want granted", got, err)
		}
		if waited := time.Since(start); waited < 900*time.Millisecond || waited > 2*time.Second {
			t.Fatalf("granted after %v, want about the 1 s TTL", waited)
		}
	})
}
