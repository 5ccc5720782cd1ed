package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/maelstrom"
)

// ErrorFor maps an error of the lock node or the register replica to the
// Maelstrom error a client gets. Definite codes are used only where the
// operation certainly did not and never will take effect; anything that may
// have reached a leader's log is Timeout or Crash, which are indefinite.
// The order matters: an outcome-unknown error may wrap a definite one (a
// forward that failed after sending), and unknown wins.
func ErrorFor(err error) *maelstrom.Error {
	if e, ok := err.(*maelstrom.Error); ok {
		return e
	}
	msg := err.Error()
	switch {
	case errors.Is(err, node.ErrIndeterminate):
		if errors.Is(err, context.DeadlineExceeded) {
			return maelstrom.NewError(maelstrom.Timeout, msg)
		}
		return maelstrom.NewError(maelstrom.Crash, msg)
	case errors.Is(err, node.ErrNotLeader), errors.Is(err, node.ErrUnavailable):
		// Never proposed: no leader before the deadline, or refused by a
		// node that was not leader.
		return maelstrom.NewError(maelstrom.TemporarilyUnavailable, msg)
	case errors.Is(err, node.ErrQueueFull), errors.Is(err, node.ErrTooManyLocks):
		return maelstrom.NewError(maelstrom.TemporarilyUnavailable, msg)
	case errors.Is(err, node.ErrRequestIDReused):
		return maelstrom.NewError(maelstrom.Abort, msg)
	case errors.Is(err, node.ErrNotHolder):
		return maelstrom.NewError(maelstrom.PreconditionFailed, msg)
	case errors.Is(err, lock.ErrInvalid), errors.Is(err, lock.ErrCorrupt):
		return maelstrom.NewError(maelstrom.MalformedRequest, msg)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return maelstrom.NewError(maelstrom.Timeout, msg)
	default:
		// ErrShutdown (a waiter whose node stopped may still be queued),
		// ErrLeaseEnded (the acquire did take effect, earlier), and bugs.
		return maelstrom.NewError(maelstrom.Crash, msg)
	}
}

// acquireError is ErrorFor for an acquire that may have been queued
// (wait > 0): once queued, Node.Acquire's give-up path proposes a cancel,
// and that proposal's definite failures (no leader, not holder) say nothing
// about the acquire, which may still be granted. Only refusals that come
// before or with the acquire's own proposal stay definite.
func acquireError(err error, waitMs int64) *maelstrom.Error {
	e := ErrorFor(err)
	if waitMs == 0 || !e.Definite() {
		return e
	}
	if errors.Is(err, lock.ErrInvalid) || errors.Is(err, node.ErrQueueFull) ||
		errors.Is(err, node.ErrTooManyLocks) || errors.Is(err, node.ErrRequestIDReused) {
		return e
	}
	return maelstrom.NewError(maelstrom.Timeout, fmt.Sprintf("a waiting acquire may still be queued: %v", err))
}
