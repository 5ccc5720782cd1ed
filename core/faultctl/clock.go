package faultctl

import (
	"fmt"
	"sync"
	"time"
)

// Clock is a node's monotonic clock under test control: a reading since
// process start, moved by an offset, a rate (drift) and forward jumps. It
// satisfies node.Clock and is safe for concurrent use.
//
//	reading = offset + anchorRead + rate × (time.Since(anchorWall))
//
// A rate change re-anchors, so the reading stays continuous across it.
type Clock struct {
	mu         sync.Mutex
	anchorWall time.Time
	anchorRead time.Duration
	rate       float64
	offset     time.Duration
}

// NewClock returns a clock reading 0 now at rate 1.
func NewClock() *Clock { return &Clock{anchorWall: time.Now(), rate: 1} }

// Now returns the current reading.
func (c *Clock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset + c.scaledLocked(time.Now())
}

func (c *Clock) scaledLocked(now time.Time) time.Duration {
	return c.anchorRead + time.Duration(c.rate*float64(now.Sub(c.anchorWall)))
}

// SetRate makes the reading advance rate seconds per real second from now
// on; rate must be positive (a monotonic clock never stops or runs back).
func (c *Clock) SetRate(rate float64) error {
	if !(rate > 0) || rate > 100 {
		return fmt.Errorf("faultctl: clock rate %v must be in (0, 100]", rate)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.anchorRead = c.scaledLocked(now)
	c.anchorWall = now
	c.rate = rate
	return nil
}

// SetOffset sets the constant added to the reading.
func (c *Clock) SetOffset(offset time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = offset
}

// Jump moves the reading forward by d at once (a VM resumed with a clock
// step); d must not be negative.
func (c *Clock) Jump(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("faultctl: clock jump %s must not be negative", d)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
	return nil
}
