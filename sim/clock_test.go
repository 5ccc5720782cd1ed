package sim

import (
	"testing"
	"testing/synctest"
	"time"
)

// Goal: the clock's offset, drift, jump and freeze arithmetic. Method: a
// script of operations and virtual sleeps with the reading expected after
// each step.
func TestClockMath(t *testing.T) {
	type step struct {
		name  string
		do    func(c *Clock)
		sleep time.Duration
		want  time.Duration
	}
	steps := []step{
		{"rate 1", func(*Clock) {}, time.Second, time.Second},
		{"fast drift", func(c *Clock) { mustRate(t, c, 1.5) }, 2 * time.Second, 4 * time.Second},
		{"slow drift, no jump", func(c *Clock) { mustRate(t, c, 0.5) }, 2 * time.Second, 5 * time.Second},
		{"offset", func(c *Clock) { c.SetOffset(10 * time.Second) }, 0, 15 * time.Second},
		{"offset replaced", func(c *Clock) { c.SetOffset(time.Second) }, 0, 6 * time.Second},
		{"jump", func(c *Clock) { c.Jump(3 * time.Second) }, 0, 9 * time.Second},
		{"backward jump", func(c *Clock) { c.Jump(-time.Second) }, 0, 8 * time.Second},
		{"frozen", func(c *Clock) { c.Freeze() }, 4 * time.Second, 8 * time.Second},
		{"jump while frozen is hidden", func(c *Clock) { c.Jump(time.Second) }, 0, 8 * time.Second},
		{"unfreeze catches up", func(c *Clock) { c.Unfreeze() }, 0, 11 * time.Second},
		{"rate 1 again", func(c *Clock) { mustRate(t, c, 1) }, time.Second, 12 * time.Second},
	}
	synctest.Test(t, func(t *testing.T) {
		c := NewClock()
		for _, s := range steps {
			s.do(c)
			time.Sleep(s.sleep)
			if got := c.Now(); got != s.want {
				t.Fatalf("%s: reading %v, want %v", s.name, got, s.want)
			}
		}
	})
}

func mustRate(t *testing.T, c *Clock, rate float64) {
	t.Helper()
	if err := c.SetRate(rate); err != nil {
		t.Fatal(err)
	}
}

// Goal: a non-positive rate is refused, keeping the clock monotonic. Method:
// try 0 and -1 and check the reading still advances at the old rate.
func TestClockRejectsNonPositiveRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewClock()
		for _, r := range []float64{0, -1} {
			if err := c.SetRate(r); err == nil {
				t.Errorf("rate %v accepted", r)
			}
		}
		time.Sleep(time.Second)
		if got := c.Now(); got != time.Second {
			t.Fatalf("reading %v, want 1s", got)
		}
	})
}

// Goal: RealClock is monotonic and starts near zero. Method: two readings in
// a row outside any bubble.
func TestRealClock(t *testing.T) {
	c := NewRealClock()
	a := c.Now()
	b := c.Now()
	if a < 0 || b < a || b > time.Minute {
		t.Fatalf("readings %v then %v", a, b)
	}
}
