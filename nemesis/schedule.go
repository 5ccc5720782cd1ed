package nemesis

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Step is one fault of a schedule.
type Step struct {
	// At is when the step starts, from the start of the scenario.
	At time.Duration `json:"at_ns"`
	// Nemesis is a catalogue name (see Names).
	Nemesis string `json:"nemesis"`
	// Duration is how long the fault is held.
	Duration time.Duration `json:"duration_ns"`
}

// Schedule is an ordered list of steps; it is saved next to a run's history
// so the run can be replayed.
type Schedule []Step

// Validate checks that every step names a catalogue nemesis and that steps
// are in order with non-negative times.
func (s Schedule) Validate() error {
	var prev time.Duration
	for i, st := range s {
		if _, ok := ByName(st.Nemesis); !ok {
			return fmt.Errorf("step %d: %w %q", i, ErrUnknownNemesis, st.Nemesis)
		}
		if st.At < prev || st.Duration < 0 {
			return fmt.Errorf("step %d (%s): at %s after %s, duration %s: steps must be in order with non-negative times",
				i, st.Nemesis, st.At, prev, st.Duration)
		}
		prev = st.At
	}
	return nil
}

// ScheduleOptions shapes RandomSchedule. Zero fields take the defaults
// noted.
type ScheduleOptions struct {
	// FaultMin and FaultMax bound each step's Duration (1 s, 5 s).
	FaultMin, FaultMax time.Duration
	// GapMin and GapMax bound the quiet time before each step (500 ms, 3 s).
	GapMin, GapMax time.Duration
	// Warmup is fault-free time at the start, e.g. for the first election (0).
	Warmup time.Duration
	// Cooldown is fault-free time at the end, so the checker can judge
	// recovery (0).
	Cooldown time.Duration
	// StepsMax bounds the number of steps (64).
	StepsMax int
}

func (o ScheduleOptions) withDefaults() ScheduleOptions {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.FaultMin, time.Second)
	def(&o.FaultMax, 5*time.Second)
	def(&o.GapMin, 500*time.Millisecond)
	def(&o.GapMax, 3*time.Second)
	if o.StepsMax == 0 {
		o.StepsMax = 64
	}
	return o
}

// RandomSchedule draws non-overlapping steps over names, all inside
// [Warmup, total-Cooldown]. The same rng state and arguments give the same
// schedule. Names are not checked here; Validate or Run reports unknown ones.
func RandomSchedule(rng *rand.Rand, names []string, total time.Duration, opts ScheduleOptions) Schedule {
	o := opts.withDefaults()
	end := total - o.Cooldown
	var s Schedule
	at := o.Warmup
	for len(s) < o.StepsMax && len(names) > 0 {
		at += uniform(rng, o.GapMin, o.GapMax)
		d := uniform(rng, o.FaultMin, o.FaultMax)
		if at+d > end {
			break
		}
		s = append(s, Step{At: at, Nemesis: names[rng.IntN(len(names))], Duration: d})
		at += d
	}
	return s
}
