package node_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node/nodetest"
)

// acquireAs is an exclusive FIFO acquire with a request id on node i.
func acquireAs(ctx context.Context, c *nodetest.Cluster, i int, resource, client, request string, ttl, wait time.Duration) (lock.Result, error) {
	return c.Nodes[i].Acquire(ctx, lock.Command{
		Resource: resource, ClientID: client, RequestID: request, Mode: lock.Exclusive,
		TTLMs: ttl.Milliseconds(), WaitMs: wait.Milliseconds(),
	})
}

// TestRetryDoesNotCutTheOriginalWaitShort: goal — a retry of a queued
// request (same request id) with a shorter wait joins the original wait
// instead of ending it. Method: original waits 6 s on one node, a retry
// with 1 s arrives on another after 1 s and gives up; the queue entry stays
// and the original is granted when the holder releases at 3 s.
func TestRetryDoesNotCutTheOriginalWaitShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		ctx := context.Background()
		lead := c.Leader()
		held, err := c.Acquire(ctx, lead, "r", "A", time.Minute, 0)
		if err != nil || !held.Granted {
			t.Fatalf("holder: %+v %v", held, err)
		}
		a, b := (lead+1)%3, (lead+2)%3
		start := time.Now()
		type answer struct {
			res lock.Result
			err error
			at  time.Duration
		}
		original := make(chan answer, 1)
		go func() {
			res, err := acquireAs(ctx, c, a, "r", "W", "req-1", time.Minute, 6*time.Second)
			original <- answer{res, err, time.Since(start)}
		}()
		time.Sleep(time.Second)
		retry, err := acquireAs(ctx, c, b, "r", "W", "req-1", time.Minute, time.Second)
		if err != nil || retry.Granted || retry.Position != 1 {
			t.Fatalf("retry = %+v, %v; want not granted at position 1", retry, err)
		}
		st, err := c.Nodes[lead].Status(ctx, "r")
		if err != nil || len(st.Status.Queue) != 1 {
			t.Fatalf("after the retry gave up the queue is %+v (%v), want the original still queued", st.Status, err)
		}
		time.Sleep(time.Second) // t = 3 s
		if _, err := c.Nodes[lead].Release(ctx, "r", held.Lease.ID); err != nil {
			t.Fatal(err)
		}
		got := <-original
		if got.err != nil || !got.res.Granted || got.at > 4*time.Second {
			t.Fatalf("original = %+v, %v after %v; want granted at about 3 s", got.res, got.err, got.at)
		}
	})
}

// TestCrashedWaiterNodeDoesNotHoldTheLock: goal — when the node holding a
// queued request dies while the rest of the cluster lives on, a release
// does not hand the lock to that dead request for its whole TTL. Method:
// holder on the leader, a waiter (60 s TTL) on a follower, stop the
// follower, wait past UnreachableAfter, release; a new try-lock must win.
func TestCrashedWaiterNodeDoesNotHoldTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		ctx := context.Background()
		lead := c.Leader()
		held, err := c.Acquire(ctx, lead, "r", "A", time.Minute, 0)
		if err != nil || !held.Granted {
			t.Fatalf("holder: %+v %v", held, err)
		}
		f := (lead + 1) % 3
		go func() { _, _ = c.Acquire(ctx, f, "r", "W", time.Minute, 30*time.Second) }()
		waitQueued(t, c, lead, "r", 1)
		c.Stop(f)
		time.Sleep(3 * time.Second)
		if _, err := c.Nodes[lead].Release(ctx, "r", held.Lease.ID); err != nil {
			t.Fatal(err)
		}
		got, err := c.Acquire(ctx, lead, "r", "C", time.Minute, 0)
		if err != nil || !got.Granted {
			t.Fatalf("new client after the release: %+v, %v; the dead waiter holds the lock", got, err)
		}
	})
}

// TestWaiterOfARestartedClusterDoesNotHoldTheLock: goal — after every
// member is killed and restarted with its disk, a queued request that died
// with its node is never left holding the lock. Method: holder and a
// waiter queued on a follower, stop all three, restart all three, release
// the holder at once (the grant races the restarted node's hello: the
// orphan release must undo it) or a second later (the hello has cancelled
// the request); a new try-lock must be granted within a few seconds (the
// waiter's TTL is a minute).
func TestWaiterOfARestartedClusterDoesNotHoldTheLock(t *testing.T) {
	for _, delay := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprintf("release after %v", delay), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { restartWithWaiter(t, delay) })
		})
	}
}

func restartWithWaiter(t *testing.T, releaseAfter time.Duration) {
	c := nodetest.New(t, 3, nil)
	ctx := context.Background()
	lead := c.Leader()
	held, err := c.Acquire(ctx, lead, "r", "A", 10*time.Minute, 0)
	if err != nil || !held.Granted {
		t.Fatalf("holder: %+v %v", held, err)
	}
	f := (lead + 1) % 3
	go func() { _, _ = c.Acquire(ctx, f, "r", "W", time.Minute, 5*time.Minute) }()
	waitQueued(t, c, lead, "r", 1)
	for i := range c.Nodes {
		c.Stop(i)
	}
	for i := range c.Nodes {
		c.Start(i)
	}
	lead = c.Leader()
	time.Sleep(releaseAfter)
	if _, err := c.Nodes[lead].Release(ctx, "r", held.Lease.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := c.Acquire(ctx, c.Leader(), "r", "C", time.Minute, 0)
		if err == nil && got.Granted {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("new client still refused 5 s after the release: %+v, %v", got, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitQueued waits until resource has n queued requests, read through node i.
func waitQueued(t *testing.T, c *nodetest.Cluster, i int, resource string, n int) {
	t.Helper()
	for range 100 {
		st, err := c.Nodes[i].Status(context.Background(), resource)
		if err == nil && len(st.Status.Queue) == n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never had %d queued requests", resource, n)
}
