package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// Goal: Run executes steps in order at their virtual times, starting a
// step late when the previous one overran. Method: a fixed schedule on a
// 3-node fake in a synctest bubble; compare the timed call log.
func TestRunOrderAndTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, rec := newFake(3, "n1"), &fakeRecorder{}
		sched := Schedule{
			{At: time.Second, Nemesis: "killLeader", Duration: 2 * time.Second},
			{At: 5 * time.Second, Nemesis: "pauseLeader", Duration: time.Second},
			{At: 5500 * time.Millisecond, Nemesis: "skewClockLeader", Duration: time.Second}, // overlaps: starts at 6 s
		}
		if err := Run(t.Context(), f, sched, seeded(1), rec); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range f.callLog() {
			got = append(got, fmt.Sprintf("%s %s %s", c.at, c.op, c.id))
		}
		want := []string{
			"1s Crash n1", "3s Restart n1",
			"5s Pause n1", "6s Resume n1",
			"6s SetClockOffset n1", "7s SetClockOffset n1",
		}
		if !slices.Equal(got, want) {
			t.Errorf("calls\n%v\nwant\n%v", got, want)
		}
		var names []string
		for _, w := range rec.all() {
			names = append(names, w.name)
		}
		if !slices.Equal(names, []string{"killLeader", "pauseLeader", "skewClockLeader"}) {
			t.Errorf("windows %v", names)
		}
		if took := time.Since(f.born); took != 7*time.Second {
			t.Errorf("Run took %s, want 7s", took)
		}
	})
}

// Goal: Run rejects a schedule with an unknown name before injecting
// anything. Method: the bad step is last; no call may happen.
func TestRunUnknownNemesis(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(3, "n1")
		sched := Schedule{{At: 0, Nemesis: "killLeader", Duration: time.Second}, {At: time.Second, Nemesis: "meteorStrike", Duration: time.Second}}
		if err := Run(t.Context(), f, sched, seeded(1), &fakeRecorder{}); !errors.Is(err, ErrUnknownNemesis) {
			t.Errorf("Run = %v, want ErrUnknownNemesis", err)
		}
		if calls := f.callLog(); len(calls) > 0 {
			t.Errorf("calls %+v before the schedule was checked", calls)
		}
	})
}

// Goal: a step that is not applicable now is skipped and the run goes on.
// Method: no leader, so killLeader is skipped and killRandom still runs at
// its time.
func TestRunSkipsNotApplicable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, rec := newFake(3, ""), &fakeRecorder{}
		sched := Schedule{{At: 0, Nemesis: "killLeader", Duration: time.Second}, {At: 2 * time.Second, Nemesis: "killRandom", Duration: time.Second}}
		if err := Run(t.Context(), f, sched, seeded(1), rec); err != nil {
			t.Fatal(err)
		}
		calls := f.callLog()
		if len(calls) != 2 || calls[0].op != "Crash" || calls[0].at != 2*time.Second {
			t.Errorf("calls %+v, want only killRandom's, from 2s", calls)
		}
		if ws := rec.all(); len(ws) != 1 || ws[0].name != "killRandom" {
			t.Errorf("windows %+v, want only killRandom", ws)
		}
	})
}

// Goal: Run stops with ctx, mid-step or between steps, leaving the cluster
// healed. Method: cancel during the first step's fault and, separately,
// during the wait for the first step.
func TestRunCancel(t *testing.T) {
	sched := Schedule{{At: time.Second, Nemesis: "isolateLeader", Duration: 3 * time.Second}, {At: 10 * time.Second, Nemesis: "killRandom", Duration: time.Second}}
	for _, cancelAt := range []time.Duration{500 * time.Millisecond, 2 * time.Second} {
		t.Run(cancelAt.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(3, "n1")
				ctx, cancel := context.WithCancel(t.Context())
				time.AfterFunc(cancelAt, cancel)
				if err := Run(ctx, f, sched, seeded(1), &fakeRecorder{}); !errors.Is(err, context.Canceled) {
					t.Errorf("Run = %v, want context.Canceled", err)
				}
				if took := time.Since(f.born); took != cancelAt {
					t.Errorf("Run returned after %s, want %s", took, cancelAt)
				}
				if l := f.lingering(); len(l) > 0 {
					t.Errorf("faults left in place: %v", l)
				}
			})
		})
	}
}

// Goal: a whole run is reproducible from the seed. Method: draw a schedule
// and run it twice on fresh fakes; the call logs must match.
func TestRunReproducible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run := func() []string {
			f := newFake(5, "n2")
			rng := seeded(77)
			sched := RandomSchedule(rng, Names(), 2*time.Minute, ScheduleOptions{})
			if err := Run(t.Context(), f, sched, rng, &fakeRecorder{}); err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, c := range f.callLog() {
				out = append(out, fmt.Sprintf("%+v", c))
			}
			return out
		}
		a, b := run(), run()
		if len(a) == 0 || !slices.Equal(a, b) {
			t.Errorf("runs differ or are empty: %d vs %d calls", len(a), len(b))
		}
	})
}
