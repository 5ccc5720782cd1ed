package driftclock

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestReading: goal — the reading follows offset + rate × elapsed, stays
// continuous across a rate change, and jumps add to the offset until it is
// set again. Method: a script of changes and virtual sleeps with the
// reading expected after each step.
func TestReading(t *testing.T) {
	steps := []struct {
		name  string
		do    func(c *Clock)
		sleep time.Duration
		want  time.Duration
	}{
		{"origin, rate 2", func(*Clock) {}, time.Second, 7 * time.Second},
		{"slower, no jump", func(c *Clock) { c.SetRate(0.5) }, 2 * time.Second, 8 * time.Second},
		{"jump", func(c *Clock) { c.Jump(3 * time.Second) }, 0, 11 * time.Second},
		{"offset replaces origin and jump", func(c *Clock) { c.SetOffset(time.Second) }, 0, 4 * time.Second},
		{"backward jump", func(c *Clock) { c.Jump(-time.Second) }, 2 * time.Second, 4 * time.Second},
	}
	synctest.Test(t, func(t *testing.T) {
		c := New(5*time.Second, 2)
		for _, s := range steps {
			s.do(c)
			time.Sleep(s.sleep)
			if got := c.Now(); got != s.want {
				t.Fatalf("%s: reading %v, want %v", s.name, got, s.want)
			}
		}
	})
}
