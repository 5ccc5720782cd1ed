package lock

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// Check reports why cmd can never succeed, or nil. The server calls it before
// proposing (to answer 400 without touching the log) and Apply calls it again,
// because a log entry must never be able to corrupt state.
func (c Config) Check(cmd *Command) error {
	if err := c.checkStamps(cmd); err != nil {
		return err
	}
	if err := c.checkNames(cmd); err != nil {
		return err
	}
	if err := checkPermits(cmd); err != nil {
		return err
	}
	switch cmd.Op {
	case OpAcquire, OpAcquireMany:
		if err := c.checkID("client_id", cmd.ClientID, true); err != nil {
			return err
		}
		if err := c.checkID("request_id", cmd.RequestID, false); err != nil {
			return err
		}
		if cmd.Mode != Exclusive && cmd.Mode != Shared {
			return fmt.Errorf("%w: mode must be exclusive or shared", ErrInvalid)
		}
		if cmd.Policy != FIFO && cmd.Policy != Throughput {
			return fmt.Errorf("%w: policy must be fifo or throughput", ErrInvalid)
		}
		if err := c.checkTTL(cmd.TTLMs, false); err != nil {
			return err
		}
		if cmd.GraceMs < 0 || cmd.GraceMs > cmd.TTLMs {
			return fmt.Errorf("%w: grace must be in 0..ttl (%d) ms, got %d", ErrBadGrace, cmd.TTLMs, cmd.GraceMs)
		}
		// Compare in ms: converting a huge WaitMs to ns would wrap and pass.
		if cmd.WaitMs < 0 || cmd.WaitMs > c.MaxWait.Milliseconds() {
			return fmt.Errorf("%w: wait must be in 0..%d ms", ErrInvalid, c.MaxWait.Milliseconds())
		}
		if cmd.LeaseID.IsZero() {
			return fmt.Errorf("%w: proposer must assign a lease id", ErrInvalid)
		}
		// A derived id must never be zero: no release could name it.
		for i := range cmd.Resources {
			if ManyLeaseID(cmd.LeaseID, i).IsZero() {
				return fmt.Errorf("%w: lease id %s leaves a zero lease for resource %d", ErrInvalid, cmd.LeaseID, i)
			}
		}
	case OpRenew:
		if err := c.checkTTL(cmd.TTLMs, true); err != nil {
			return err
		}
		fallthrough
	case OpRelease, OpCancel, OpOrphan:
		if cmd.LeaseID.IsZero() {
			return fmt.Errorf("%w: lease_id is required", ErrInvalid)
		}
		if cmd.Op == OpOrphan && cmd.Owner.IsZero() && cmd.Host == "" {
			return fmt.Errorf("%w: an orphan names the attempt (owner) or the host giving it up", ErrInvalid)
		}
	case OpHello:
		if cmd.Host == "" || cmd.Incarnation == 0 {
			return fmt.Errorf("%w: hello needs a host and an incarnation", ErrInvalid)
		}
	case OpTick, OpStatus:
	default:
		return fmt.Errorf("%w: unknown op %d", ErrInvalid, cmd.Op)
	}
	return nil
}

// checkNames checks which resources a command names: one Resource, or
// for a multi request (OpAcquireMany, or an OpCancel naming one) the
// Resources list and no Resource. Tick and hello name none.
func (c Config) checkNames(cmd *Command) error {
	many := cmd.Op == OpAcquireMany || (cmd.Op == OpCancel && len(cmd.Resources) > 0)
	if !many {
		if len(cmd.Resources) > 0 {
			return fmt.Errorf("%w: %v takes resource, not resources", ErrInvalid, cmd.Op)
		}
		if cmd.Op == OpTick || cmd.Op == OpHello {
			return nil
		}
		return c.checkID("resource", cmd.Resource, true)
	}
	if cmd.Resource != "" {
		return fmt.Errorf("%w: %v takes resources, not resource", ErrInvalid, cmd.Op)
	}
	if len(cmd.Resources) == 0 || len(cmd.Resources) > MaxManyResources {
		return fmt.Errorf("%w: %d resources, want 1..%d", ErrInvalid, len(cmd.Resources), MaxManyResources)
	}
	for i, name := range cmd.Resources {
		if err := c.checkID("resource", name, true); err != nil {
			return fmt.Errorf("resources[%d]: %w", i, err)
		}
		if slices.Contains(cmd.Resources[:i], name) {
			return fmt.Errorf("%w: resource %q named twice", ErrInvalid, name)
		}
	}
	return nil
}

// maxSuspects bounds the suspect list of one entry (a group has a handful
// of members).
const maxSuspects = 64

// checkStamps checks what the proposing node and the leader add to a
// command: its host and the leader's suspect list.
func (c Config) checkStamps(cmd *Command) error {
	if err := c.checkID("host", cmd.Host, false); err != nil {
		return err
	}
	if len(cmd.Suspects) > maxSuspects {
		return fmt.Errorf("%w: %d suspects, at most %d", ErrInvalid, len(cmd.Suspects), maxSuspects)
	}
	for _, h := range cmd.Suspects {
		if err := c.checkID("suspect", h, true); err != nil {
			return err
		}
	}
	return nil
}

func (c Config) checkID(field, s string, required bool) error {
	if s == "" {
		if required {
			return fmt.Errorf("%w: %s is required", ErrInvalid, field)
		}
		return nil
	}
	if len(s) > c.MaxIDLen {
		return fmt.Errorf("%w: %s is %d bytes, at most %d allowed", ErrInvalid, field, len(s), c.MaxIDLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s must be valid UTF-8", ErrInvalid, field)
	}
	return nil
}

func (c Config) checkTTL(ttlMs int64, zeroOK bool) error {
	if ttlMs == 0 && zeroOK {
		return nil
	}
	// The upper bound is checked in ms first: converting a huge ttlMs to ns
	// would wrap and pass.
	if ttlMs <= 0 || ttlMs > c.MaxTTL.Milliseconds() || time.Duration(ttlMs)*time.Millisecond < c.MinTTL {
		return fmt.Errorf("%w: ttl must be in %d..%d ms", ErrInvalid,
			c.MinTTL.Milliseconds(), c.MaxTTL.Milliseconds())
	}
	return nil
}
