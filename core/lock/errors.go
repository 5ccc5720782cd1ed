package lock

import (
	"errors"
	"fmt"
)

// Code is the definite outcome class of a command. Every code except OK
// means the command changed nothing.
type Code uint8

const (
	OK Code = iota
	// NotHolder: release/renew of a lease that is not a live holder (never
	// granted, released, or expired). It never resurrects a lease.
	NotHolder
	// Invalid: the command is malformed (bad resource, TTL, mode).
	Invalid
	// QueueFull: the resource's queue is at Config.MaxWaitersPerQueue.
	QueueFull
	// TooManyLocks: the shard holds Config.MaxResources resources.
	TooManyLocks
	// RequestIDReused: an acquire's (client_id, request_id) was first used
	// for a different request (resource, mode, ttl, policy or permits).
	RequestIDReused
	// LeaseEnded: a retried acquire whose original request was granted, but
	// that lease has since been released or has expired. Result.Lease
	// describes the ended lease.
	LeaseEnded
	// QuotaExceeded: the acquire would take its namespace or client past
	// the Quota it carries; Result.Blocked names the limit.
	QuotaExceeded
	// PermitsMismatch: the acquire names other permits than the resource
	// has (a semaphore of another N, a plain lock asked as a semaphore or
	// the reverse, or acquire_many on a semaphore); see semaphore.go.
	PermitsMismatch
	// Deadlock: the acquire would have waited in a wait-for cycle inside
	// its group; Result.Cycle names it (deadlock.go). Nothing was queued.
	Deadlock
)

func (c Code) String() string {
	switch c {
	case OK:
		return "ok"
	case NotHolder:
		return "not_holder"
	case Invalid:
		return "invalid_argument"
	case QueueFull:
		return "queue_full"
	case TooManyLocks:
		return "too_many_locks"
	case RequestIDReused:
		return "request_id_reused"
	case LeaseEnded:
		return "lease_ended"
	case QuotaExceeded:
		return "quota_exceeded"
	case PermitsMismatch:
		return "permits_mismatch"
	case Deadlock:
		return "deadlock"
	default:
		return "unknown"
	}
}

// ErrInvalid marks input that can never succeed; callers map it to 400.
var ErrInvalid = errors.New("invalid argument")

// ErrBadGrace marks an acquire whose grace is not in 0..ttl; it is an
// ErrInvalid too, answered with its own code (bad_grace).
var ErrBadGrace = fmt.Errorf("%w: bad grace", ErrInvalid)

// ErrCorrupt marks a snapshot or command encoding that cannot be decoded.
var ErrCorrupt = errors.New("corrupt encoding")
