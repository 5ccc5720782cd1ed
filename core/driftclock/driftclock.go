// Package driftclock is a monotonic clock reading that tests can skew,
// derived from time.Now (virtual inside a synctest bubble) through a rate
// (drift) and an offset (steps and jumps). It is both core/faultctl's
// clock for real processes and the simulator's (sim), which each add their
// own limits and controls.
package driftclock

import (
	"sync"
	"time"
)

// Clock reads
//
//	offset + anchorRead + rate × (time.Now() − anchorWall)
//
// A rate change re-anchors, so the reading stays continuous across it. It
// is safe for concurrent use.
type Clock struct {
	mu         sync.Mutex
	anchorWall time.Time     // instant of the last rate change
	anchorRead time.Duration // rate-scaled reading (without offset) at anchorWall
	rate       float64
	offset     time.Duration
}

// New returns a clock reading offset now and advancing at rate, which
// must be positive.
func New(offset time.Duration, rate float64) *Clock {
	return &Clock{anchorWall: time.Now(), rate: rate, offset: offset}
}

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
// on (drift: 1.001 runs 0.1% fast). Callers refuse a rate that is not
// positive: a monotonic clock never stops or runs backward.
func (c *Clock) SetRate(rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.anchorRead = c.scaledLocked(now)
	c.anchorWall = now
	c.rate = rate
}

// SetOffset sets the constant added to the reading; the reading jumps by
// the difference from the previous offset.
func (c *Clock) SetOffset(offset time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = offset
}

// Jump moves the reading by d at once, until the next SetOffset.
func (c *Clock) Jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}
