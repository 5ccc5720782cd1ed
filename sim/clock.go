package sim

import (
	"fmt"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/driftclock"
	"github.com/lockstep/lockstep/core/node"
)

// Clock is a node's simulated monotonic clock: Now is the time since an
// arbitrary origin, derived from time.Now (virtual inside a synctest
// bubble) through a rate, an offset and jumps (driftclock), and freezes.
// It is safe for concurrent use.
type Clock struct {
	drift  *driftclock.Clock
	origin time.Duration // the arbitrary start of a real monotonic clock

	mu       sync.Mutex // guards the freeze
	frozen   bool
	frozenAt time.Duration // reading returned while frozen
}

var _ node.Clock = (*Clock)(nil)

// NewClock returns a clock reading 0 now and advancing at rate 1.
func NewClock() *Clock {
	return NewClockAt(0, 1)
}

// NewClockAt returns a clock reading origin now and advancing at rate:
// real monotonic clocks start at unrelated points and run at slightly
// different speeds. rate must be positive.
func NewClockAt(origin time.Duration, rate float64) *Clock {
	if !(rate > 0) {
		rate = 1
	}
	return &Clock{drift: driftclock.New(origin, rate), origin: origin}
}

// Now returns the current reading.
func (c *Clock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return c.frozenAt
	}
	return c.drift.Now()
}

// SetRate makes the reading advance rate seconds per real second from now on
// (drift: 1.001 runs 0.1% fast). The reading is continuous across the change.
// rate must be positive: a monotonic clock never stops or runs backward.
func (c *Clock) SetRate(rate float64) error {
	if !(rate > 0) {
		return fmt.Errorf("sim: clock rate %v must be positive", rate)
	}
	c.drift.SetRate(rate)
	return nil
}

// SetOffset sets the constant added to the reading; the reading jumps by the
// difference from the previous offset.
func (c *Clock) SetOffset(offset time.Duration) {
	c.drift.SetOffset(c.origin + offset)
}

// Jump moves the reading by d at once. A forward jump models a node that
// lost track of time (e.g. a VM resumed with a clock step). A negative d
// moves the reading backward, which a monotonic clock never does: use it
// only to check that code relying on monotonicity detects or survives a
// broken clock source. While frozen, the jump shows after Unfreeze.
func (c *Clock) Jump(d time.Duration) {
	c.drift.Jump(d)
}

// Freeze stops the reading where it is, as seen by a process that cannot run.
// Freezing a frozen clock does nothing.
func (c *Clock) Freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.frozen {
		c.frozenAt = c.drift.Now()
		c.frozen = true
	}
}

// Unfreeze lets the reading run again. The underlying clock never stopped,
// so the reading catches up at once by the frozen interval: a process
// resumed from a stop-the-world pause sees that time passed.
func (c *Clock) Unfreeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = false
}

// RealClock is a process-monotonic clock for use outside the simulator.
type RealClock struct {
	start time.Time
}

var _ node.Clock = RealClock{}

// NewRealClock returns a clock reading 0 now.
func NewRealClock() RealClock {
	return RealClock{start: time.Now()}
}

// Now returns the monotonic time since NewRealClock.
func (c RealClock) Now() time.Duration { return time.Since(c.start) }
