package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/maelstrom"
)

// TestErrorFor pins the mapping from every error the lock node and the
// register replica return to a Maelstrom code. Goal: an outcome that may
// have reached a leader's log is never given a definite code. Method: one
// row per error path, wrapped as the nodes wrap them.
func TestErrorFor(t *testing.T) {
	wrapped := func(outer, inner error) error { return fmt.Errorf("%w: %w", outer, inner) }
	cases := []struct {
		name string
		err  error
		code int
	}{
		{"no leader before the deadline", wrapped(node.ErrUnavailable, context.DeadlineExceeded), maelstrom.TemporarilyUnavailable},
		{"refused by a non-leader", node.ErrNotLeader, maelstrom.TemporarilyUnavailable},
		{"enqueue timeout", wrapped(node.ErrUnavailable, raft.ErrEnqueueTimeout), maelstrom.TemporarilyUnavailable},
		{"leadership lost after proposing", wrapped(node.ErrIndeterminate, raft.ErrLeadershipLost), maelstrom.Crash},
		{"forward sent, no reply", fmt.Errorf("%w: forward to n1: %w", node.ErrIndeterminate, context.DeadlineExceeded), maelstrom.Timeout},
		{"forward failed with a definite inner error", fmt.Errorf("%w: forward: %w", node.ErrIndeterminate, lock.ErrInvalid), maelstrom.Crash},
		{"not holder", node.ErrNotHolder, maelstrom.PreconditionFailed},
		{"malformed", fmt.Errorf("%w: ttl", lock.ErrInvalid), maelstrom.MalformedRequest},
		{"corrupt", lock.ErrCorrupt, maelstrom.MalformedRequest},
		{"queue full", node.ErrQueueFull, maelstrom.TemporarilyUnavailable},
		{"too many locks", node.ErrTooManyLocks, maelstrom.TemporarilyUnavailable},
		{"request id reused", node.ErrRequestIDReused, maelstrom.Abort},
		{"lease ended: the acquire took effect", &node.LeaseEndedError{}, maelstrom.Crash},
		{"shutdown while a waiter may be queued", node.ErrShutdown, maelstrom.Crash},
		{"bare deadline", context.DeadlineExceeded, maelstrom.Timeout},
		{"anything else", errors.New("bug"), maelstrom.Crash},
		{"a maelstrom error passes through", maelstrom.NewError(maelstrom.KeyDoesNotExist, "x"), maelstrom.KeyDoesNotExist},
	}
	for _, c := range cases {
		e := ErrorFor(c.err)
		if e.Code != c.code {
			t.Errorf("%s: code %d (%s), want %d (%s)", c.name, e.Code, maelstrom.CodeName(e.Code), c.code, maelstrom.CodeName(c.code))
		}
		if errors.Is(c.err, node.ErrIndeterminate) && e.Definite() {
			t.Errorf("%s: an indeterminate error got definite code %d", c.name, e.Code)
		}
	}
}

// TestAcquireError checks the waiting acquire's special case: once it may
// be queued, only refusals of the acquire itself stay definite, since the
// give-up path's own failures say nothing about the queued request.
func TestAcquireError(t *testing.T) {
	unavailable := fmt.Errorf("%w: %w", node.ErrUnavailable, context.DeadlineExceeded)
	cases := []struct {
		name   string
		err    error
		waitMs int64
		code   int
	}{
		{"try-lock, no leader", unavailable, 0, maelstrom.TemporarilyUnavailable},
		{"waiting, no leader (maybe the cancel's)", unavailable, 500, maelstrom.Timeout},
		{"waiting, not holder (the cancel's)", node.ErrNotHolder, 500, maelstrom.Timeout},
		{"waiting, invalid before proposing", lock.ErrInvalid, 500, maelstrom.MalformedRequest},
		{"waiting, queue full", node.ErrQueueFull, 500, maelstrom.TemporarilyUnavailable},
		{"waiting, indeterminate", node.ErrIndeterminate, 500, maelstrom.Crash},
	}
	for _, c := range cases {
		if got := acquireError(c.err, c.waitMs).Code; got != c.code {
			t.Errorf("%s: code %d, want %d", c.name, got, c.code)
		}
	}
}
