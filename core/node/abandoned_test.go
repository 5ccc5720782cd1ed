package node_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/codec"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/node/nodetest"
)

// lossyForwarder delivers every command but loses the leader's reply to
// client's acquires (single or multi): the follower's caller learns nothing
// definite.
type lossyForwarder struct {
	node.Forwarder
	client string
	lost   *atomic.Int32
	// delay holds the error back, so the follower applies the entry first.
	delay time.Duration
}

func (f lossyForwarder) Forward(ctx context.Context, leader node.Peer, cmd []byte) ([]byte, error) {
	out, err := f.Forwarder.Forward(ctx, leader, cmd)
	if c, derr := codec.DecodeCommand(cmd); derr == nil && (c.Op == lock.OpAcquire || c.Op == lock.OpAcquireMany) && c.ClientID == f.client {
		f.lost.Add(1)
		time.Sleep(f.delay)
		return nil, fmt.Errorf("reply lost (%v)", err)
	}
	return out, err
}

// TestAbandonedWaiterDoesNotHoldTheLock: goal — a waiting acquire whose
// caller got no definite answer (the reply was lost) while its node lives
// on is not left queued for a grant nobody will deliver (README
// "Semantics": nobody holds a lock for a caller that is gone). Method: a
// holder on the leader; W's acquire (wait 30 s, TTL 1 min) from a follower
// is queued by the leader but its reply is lost; the holder releases; a
// try-lock by C must be granted within a few seconds, where without the
// fix W's grant holds the lock for its minute. The error comes at once
// (before the follower applies the entry) or after a second (after).
func TestAbandonedWaiterDoesNotHoldTheLock(t *testing.T) {
	for _, delay := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprintf("error after %v", delay), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { abandonWaiter(t, delay, false) })
		})
	}
}

// abandonWaiter runs the test; multi makes W's request an acquire_many of
// a and r, and C then tries a (free, but W's grant would hold it).
func abandonWaiter(t *testing.T, delay time.Duration, multi bool) {
	lost := new(atomic.Int32)
	c := nodetest.New(t, 3, func(cfg *node.Config) {
		cfg.Forwarder = lossyForwarder{Forwarder: cfg.Forwarder, client: "W", lost: lost, delay: delay}
	})
	ctx := context.Background()
	lead := c.Leader()
	held, err := c.Acquire(ctx, lead, "r", "A", time.Minute, 0)
	if err != nil || !held.Granted {
		t.Fatalf("holder: %+v %v", held, err)
	}
	f, tried := c.Follower(), "r"
	if multi {
		tried = "a"
		_, err = acquireMany(ctx, c, f, "W", 30*time.Second, lock.FIFO, "a", "r")
	} else {
		_, err = c.Acquire(ctx, f, "r", "W", time.Minute, 30*time.Second)
	}
	if !errors.Is(err, node.ErrIndeterminate) || lost.Load() == 0 {
		t.Fatalf("W's acquire: %v (replies lost: %d); want an indeterminate error", err, lost.Load())
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := c.Nodes[lead].Release(ctx, "r", held.Lease.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := c.Acquire(ctx, lead, tried, "C", time.Minute, 0)
		if err == nil && got.Granted {
			return
		}
		if time.Now().After(deadline) {
			st, _ := c.Nodes[lead].Status(ctx, tried)
			t.Fatalf("C still refused 5 s after the release: %+v, %v; lock: %+v", got, err, st.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAbandonedMultiWaiterDoesNotHoldTheLocks: goal — the same for a waiting
// acquire_many: a multi request whose caller got no definite answer is not
// left queued for a grant of every resource nobody will deliver. Method: as
// above with W asking for a and r at once; C's try-lock of a must be
// granted within a few seconds of r's release, where without the cancel
// W's grant holds a and r for their minute.
func TestAbandonedMultiWaiterDoesNotHoldTheLocks(t *testing.T) {
	for _, delay := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprintf("error after %v", delay), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { abandonWaiter(t, delay, true) })
		})
	}
}
