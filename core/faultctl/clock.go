package faultctl

import (
	"fmt"
	"time"

	"github.com/lockstep/lockstep/core/driftclock"
	"github.com/lockstep/lockstep/core/node"
)

// Clock is a node's monotonic clock under test control: a reading since
// process start, moved by an offset, a rate (drift) and forward jumps
// (driftclock), within the bounds a real process could see. It is safe
// for concurrent use.
type Clock struct {
	drift *driftclock.Clock
}

var _ node.Clock = (*Clock)(nil)

// NewClock returns a clock reading 0 now at rate 1.
func NewClock() *Clock { return &Clock{drift: driftclock.New(0, 1)} }

// Now returns the current reading.
func (c *Clock) Now() time.Duration { return c.drift.Now() }

// SetRate makes the reading advance rate seconds per real second from now
// on; rate must be positive (a monotonic clock never stops or runs back).
func (c *Clock) SetRate(rate float64) error {
	if !(rate > 0) || rate > 100 {
		return fmt.Errorf("faultctl: clock rate %v must be in (0, 100]", rate)
	}
	c.drift.SetRate(rate)
	return nil
}

// SetOffset sets the constant added to the reading.
func (c *Clock) SetOffset(offset time.Duration) { c.drift.SetOffset(offset) }

// Jump moves the reading forward by d at once (a VM resumed with a clock
// step); d must not be negative.
func (c *Clock) Jump(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("faultctl: clock jump %s must not be negative", d)
	}
	c.drift.Jump(d)
	return nil
}
