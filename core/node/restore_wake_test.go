package node_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/node/nodetest"
)

// TestWaiterWokenBySnapshotCatchUp: goal — a queued request granted while
// its node was behind, which then caught up by installing a snapshot (so it
// applied no entry raising the grant), is told at once, not at the end of
// its wait while the lock is held for nobody. Method: small snapshots and
// trailing logs; W queues on a follower with a 60 s wait; the follower is
// cut off, the holder releases (W is granted) and enough entries follow to
// compact the log past it; the follower rejoins and must report W's grant
// well before its wait ends (the leader does not count it unreachable:
// UnreachableAfter is long here).
func TestWaiterWokenBySnapshotCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { snapshotWake(t, false) })
}

// TestMultiWaiterWokenBySnapshotCatchUp: goal — the same for a queued
// acquire_many, which is told of all its grants at once. Method: as above
// with W asking for r and s together; without the wake W is answered only
// when its 60 s wait ends.
func TestMultiWaiterWokenBySnapshotCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { snapshotWake(t, true) })
}

// snapshotWake runs the test; multi makes W's request an acquire_many of r
// and s.
func snapshotWake(t *testing.T, multi bool) {
	c := nodetest.New(t, 3, func(cfg *node.Config) {
		cfg.SnapshotThreshold, cfg.TrailingLogs, cfg.SnapshotInterval = 4, 1, 100*time.Millisecond
		cfg.UnreachableAfter = 5 * time.Minute
	})
	ctx := context.Background()
	lead := c.Leader()
	held, err := c.Acquire(ctx, lead, "r", "A", time.Minute, 0)
	if err != nil || !held.Granted {
		t.Fatalf("holder: %+v %v", held, err)
	}
	f := c.Follower()
	start := time.Now()
	type answer struct {
		granted bool
		err     error
		at      time.Duration
	}
	done := make(chan answer, 1)
	go func() {
		var res lock.Result
		var err error
		if multi {
			res, err = acquireMany(ctx, c, f, "W", 60*time.Second, lock.FIFO, "r", "s")
			err = errors.Join(err, checkLeases(res, 2))
		} else {
			res, err = c.Acquire(ctx, f, "r", "W", time.Minute, 60*time.Second)
		}
		done <- answer{res.Granted, err, time.Since(start)}
	}()
	waitQueued(t, c, lead, "r", 1)
	c.Isolate(f)
	if _, err := c.Nodes[lead].Release(ctx, "r", held.Lease.ID); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, err := c.Acquire(ctx, lead, "other", "B", time.Minute, 0); err != nil {
			t.Fatalf("filler %d: %v", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.Rejoin(f)
	got := <-done
	if got.err != nil || !got.granted || got.at > 30*time.Second {
		t.Fatalf("W = granted %v, %v after %v; want granted soon after the follower rejoined (wait 60 s)", got.granted, got.err, got.at)
	}
	if st := c.Nodes[f].Stats(); st.Restores == 0 {
		t.Fatalf("the follower caught up without a snapshot (stats %+v): the test did not test anything", st)
	}
}

// checkLeases says what is wrong with a multi request's granted answer that
// should hold n leases.
func checkLeases(res lock.Result, n int) error {
	if res.Granted && len(res.Leases) != n {
		return fmt.Errorf("granted with %d leases, want %d", len(res.Leases), n)
	}
	return nil
}
