package node

import "time"

// MonotonicClock reads the process's monotonic clock.
type MonotonicClock struct{ start time.Time }

var _ Clock = (*MonotonicClock)(nil)

// NewMonotonicClock starts a clock at zero now.
func NewMonotonicClock() *MonotonicClock { return &MonotonicClock{start: time.Now()} }

// Now returns the time since the clock started; time.Since uses the
// monotonic reading, so wall-clock steps do not move it.
func (c *MonotonicClock) Now() time.Duration { return time.Since(c.start) }
