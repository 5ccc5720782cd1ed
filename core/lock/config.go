package lock

import (
	"fmt"
	"time"
)

// Config bounds the state machine. Every replica of a group must use the same
// Config: it takes part in apply, so differing values would diverge replicas.
type Config struct {
	MinTTL             time.Duration
	MaxTTL             time.Duration
	MaxWait            time.Duration
	MaxWaitersPerQueue int
	MaxResources       int
	// DedupeWindow is how long (log time) a (client_id, request_id) answer
	// is remembered for retries; DedupeMax caps the table.
	DedupeWindow time.Duration
	DedupeMax    int
	MaxIDLen     int
	// Bugs are deliberate mistakes for the testbed's bug-mode sweeps.
	// Production leaves them false.
	Bugs Bugs
}

// Bugs model realistic state machine mistakes; the testbed must catch each.
type Bugs struct {
	// TokenInMemory: the fencing counter behaves as if kept in a leader's
	// memory: it restarts from zero on a leader change and on restore.
	TokenInMemory bool
	// QueueInMemory: wait queues behave as if kept in a leader's memory:
	// dropped (without telling the waiters) on a leader change and on restore.
	QueueInMemory bool
	// ForgetSettled: how queued requests ended is not consulted, so a
	// cancel or retry of a request granted meanwhile reads "not granted".
	ForgetSettled bool
	// PermitOvercount: a semaphore grants one permit more than its N.
	PermitOvercount bool
	// DeadlockMiss: the in-group deadlock check never fires, so a request
	// closing a wait-for cycle is queued and the cycle stands until a
	// wait elapses.
	DeadlockMiss bool
	// GraceReviveRegranted: a renew of a lease whose grace window ended
	// (so the resource may have been granted to another since) still
	// revives it, with its old token, instead of answering not_holder.
	GraceReviveRegranted bool
}

// maxResources is the most resources one state machine can hold: the arena
// numbers slots in 24 bits, keeping 8 for the generation (see arena.go).
const maxResources = slotMask

// DefaultConfig returns the limits lockstep ships with.
func DefaultConfig() Config {
	return Config{
		MinTTL:             time.Millisecond,
		MaxTTL:             10 * time.Minute,
		MaxWait:            10 * time.Minute,
		MaxWaitersPerQueue: 100_000,
		MaxResources:       10_000_000,
		DedupeWindow:       time.Minute,
		DedupeMax:          2_000_000,
		MaxIDLen:           256,
	}
}

// Validate reports the first limit that makes no sense.
func (c Config) Validate() error {
	switch {
	case c.MinTTL <= 0:
		return fmt.Errorf("%w: MinTTL must be > 0", ErrInvalid)
	case c.MaxTTL < c.MinTTL:
		return fmt.Errorf("%w: MaxTTL must be >= MinTTL", ErrInvalid)
	case c.MaxTTL > 24*time.Hour*40:
		return fmt.Errorf("%w: MaxTTL must fit in 32-bit milliseconds", ErrInvalid)
	case c.MaxWait < 0:
		return fmt.Errorf("%w: MaxWait must be >= 0", ErrInvalid)
	case c.MaxWaitersPerQueue <= 0:
		return fmt.Errorf("%w: MaxWaitersPerQueue must be > 0", ErrInvalid)
	case c.MaxResources <= 0 || c.MaxResources > maxResources:
		return fmt.Errorf("%w: MaxResources must be in 1..%d", ErrInvalid, maxResources)
	case c.DedupeWindow < 0 || c.DedupeMax < 0:
		return fmt.Errorf("%w: dedupe limits must be >= 0", ErrInvalid)
	case c.MaxIDLen <= 0 || c.MaxIDLen > 65535:
		return fmt.Errorf("%w: MaxIDLen must be in 1..65535", ErrInvalid)
	case c.Bugs != (Bugs{}) && !bugsBuilt:
		return fmt.Errorf("%w: bug modes need a build with -tags lockstep_bugs", ErrInvalid)
	}
	return nil
}
