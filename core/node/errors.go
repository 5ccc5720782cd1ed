package node

import (
	"errors"
	"fmt"

	"github.com/lockstep/lockstep/core/lock"
)

var (
	// ErrNotHolder: release/renew of a lease that is not live. Definite.
	ErrNotHolder = errors.New("not the holder of a live lease")
	// ErrUnavailable: no leader could take the command before the deadline;
	// it was not applied. Definite, safe to retry.
	ErrUnavailable = errors.New("no leader available")
	// ErrIndeterminate: the command reached a leader but its outcome is
	// unknown (leadership lost, timeout). Retry with the same request id.
	ErrIndeterminate = errors.New("outcome unknown")
	// ErrNotLeader: a forwarded command reached a node that is not leader.
	ErrNotLeader = errors.New("not the leader")
	// ErrQueueFull / ErrTooManyLocks: a configured bound was hit. Definite.
	ErrQueueFull    = errors.New("wait queue is full")
	ErrTooManyLocks = errors.New("too many locks in this shard")
	// ErrShutdown: the node is stopping.
	ErrShutdown = errors.New("node is shut down")
)

// codeError maps a definite non-OK result code to its error.
func codeError(c lock.Code) error {
	switch c {
	case lock.OK:
		return nil
	case lock.NotHolder:
		return ErrNotHolder
	case lock.Invalid:
		return fmt.Errorf("%w: rejected by the state machine", lock.ErrInvalid)
	case lock.QueueFull:
		return ErrQueueFull
	case lock.TooManyLocks:
		return ErrTooManyLocks
	default:
		return fmt.Errorf("unexpected result code %d", c)
	}
}
