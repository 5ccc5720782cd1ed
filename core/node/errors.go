package node

import (
	"errors"
	"fmt"
	"slices"
	"strings"

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
	// ErrRequestIDReused: an acquire's (client_id, request_id) first named a
	// different request. Definite; nothing changed.
	ErrRequestIDReused = errors.New("request_id was already used for a different request")
	// ErrQuotaExceeded: the acquire would pass its namespace's or client's
	// quota (lock.Quota). Definite; nothing changed.
	ErrQuotaExceeded = errors.New("quota exceeded")
	// ErrPermitsMismatch: the acquire named other permits than the
	// resource has (a semaphore's N is fixed while anyone holds or waits
	// for it), or was an acquire_many on a semaphore. Definite; nothing
	// changed.
	ErrPermitsMismatch = errors.New("permits differ from the resource's")
	// ErrLeaseEnded matches a *LeaseEndedError.
	ErrLeaseEnded = errors.New("the lease this request was granted has ended")
	// ErrDeadlock matches a *DeadlockError.
	ErrDeadlock = errors.New("deadlock")
)

// DeadlockError answers an acquire with a wait that would have closed a
// wait-for cycle: it was refused, nothing queued. Cycle is the cycle by
// client id, the requester first, each waiting for the next, the last for
// the requester. Definite. An acquire whose queued request was removed to
// break a cycle across shards (lock.Event.Deadlock) gets one without a
// cycle: the log entry that removed it names only the request.
type DeadlockError struct {
	Cycle []string
}

func (e *DeadlockError) Error() string {
	if len(e.Cycle) == 0 {
		return fmt.Sprintf("%v: the request was removed from its queue to break a wait-for cycle across shards", ErrDeadlock)
	}
	return fmt.Sprintf("%v: waiting would close the wait-for cycle %s", ErrDeadlock, strings.Join(append(slices.Clone(e.Cycle), e.Cycle[:min(1, len(e.Cycle))]...), " -> "))
}

// Is makes errors.Is(err, ErrDeadlock) true.
func (e *DeadlockError) Is(target error) bool { return target == ErrDeadlock }

// LeaseEndedError answers a retried (or long-waiting) acquire whose request
// was granted, but whose lease has since been released or has expired: the
// caller learns it holds nothing, and which grant that was.
type LeaseEndedError struct {
	Lease lock.Lease
}

func (e *LeaseEndedError) Error() string {
	return fmt.Sprintf("%v: lease %s (fencing token %d) was released or expired", ErrLeaseEnded, e.Lease.ID, e.Lease.Token)
}

// Is makes errors.Is(err, ErrLeaseEnded) true.
func (e *LeaseEndedError) Is(target error) bool { return target == ErrLeaseEnded }

// resultError maps a definite non-OK result to its error.
func resultError(res lock.Result) error {
	switch c := res.Code; c {
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
	case lock.RequestIDReused:
		return ErrRequestIDReused
	case lock.LeaseEnded:
		return &LeaseEndedError{Lease: res.Lease}
	case lock.QuotaExceeded:
		return ErrQuotaExceeded
	case lock.PermitsMismatch:
		return permitsMismatchError(res)
	case lock.Deadlock:
		return &DeadlockError{Cycle: res.Cycle}
	default:
		return fmt.Errorf("unexpected result code %d", c)
	}
}

// permitsMismatchError says what the refused acquire's resource is.
func permitsMismatchError(res lock.Result) error {
	switch {
	case res.Blocked != "":
		return fmt.Errorf("%w: %q is a semaphore; acquire_many takes plain locks only", ErrPermitsMismatch, res.Blocked)
	case res.Status != nil && res.Status.Permits > 1:
		return fmt.Errorf("%w: %q is a semaphore of %d permits while it is held or waited for", ErrPermitsMismatch, res.Status.Resource, res.Status.Permits)
	case res.Status != nil:
		return fmt.Errorf("%w: %q is a plain lock (permits 1) while it is held or waited for", ErrPermitsMismatch, res.Status.Resource)
	}
	return ErrPermitsMismatch
}
