package nemesis

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"
)

// Goal: a schedule is reproducible from its seed. Method: draw twice with
// seed 42 and compare the JSON; a different seed must give another one.
func TestRandomScheduleReproducible(t *testing.T) {
	draw := func(seed uint64) string {
		s := RandomSchedule(seeded(seed), Names(), time.Minute, ScheduleOptions{})
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if a, b := draw(42), draw(42); a != b {
		t.Errorf("seed 42 gave\n%s\nand\n%s", a, b)
	}
	if draw(42) == draw(43) {
		t.Error("seeds 42 and 43 gave the same schedule")
	}
}

// Goal: RandomSchedule respects its options. Method: for several option
// sets and seeds, check every step's bounds, order, spacing and name.
func TestRandomScheduleBounds(t *testing.T) {
	tests := []struct {
		name  string
		total time.Duration
		opts  ScheduleOptions
		names []string
	}{
		{"defaults", time.Minute, ScheduleOptions{}, Names()},
		{"custom", 2 * time.Minute, ScheduleOptions{
			FaultMin: 200 * time.Millisecond, FaultMax: 800 * time.Millisecond,
			GapMin: 100 * time.Millisecond, GapMax: 300 * time.Millisecond,
			Warmup: 5 * time.Second, Cooldown: 10 * time.Second, StepsMax: 40,
		}, []string{"killLeader", "pauseClient"}},
		{"no names", time.Minute, ScheduleOptions{}, nil},
		{"too short", 2 * time.Second, ScheduleOptions{}, Names()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts.withDefaults()
			for seed := range uint64(20) {
				s := RandomSchedule(seeded(seed), tc.names, tc.total, tc.opts)
				if err := s.Validate(); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if len(s) > o.StepsMax {
					t.Errorf("seed %d: %d steps, max %d", seed, len(s), o.StepsMax)
				}
				prevEnd := o.Warmup
				for i, st := range s {
					if gap := st.At - prevEnd; gap < o.GapMin || gap > o.GapMax {
						t.Errorf("seed %d step %d: gap %s outside %s..%s", seed, i, gap, o.GapMin, o.GapMax)
					}
					if st.Duration < o.FaultMin || st.Duration > o.FaultMax {
						t.Errorf("seed %d step %d: duration %s outside %s..%s", seed, i, st.Duration, o.FaultMin, o.FaultMax)
					}
					if !slices.Contains(tc.names, st.Nemesis) {
						t.Errorf("seed %d step %d: %q not among %v", seed, i, st.Nemesis, tc.names)
					}
					prevEnd = st.At + st.Duration
				}
				if prevEnd > tc.total-o.Cooldown {
					t.Errorf("seed %d: faults end at %s, after %s", seed, prevEnd, tc.total-o.Cooldown)
				}
			}
		})
	}
	if s := RandomSchedule(seeded(1), Names(), time.Minute, ScheduleOptions{}); len(s) < 5 {
		t.Errorf("a minute holds only %d steps with default options", len(s))
	}
}

// Goal: a schedule survives a JSON round trip unchanged. Method: marshal,
// unmarshal, compare.
func TestScheduleJSONRoundTrip(t *testing.T) {
	s := RandomSchedule(seeded(8), Names(), time.Minute, ScheduleOptions{})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Schedule
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s, back) {
		t.Errorf("round trip changed the schedule:\n%v\n%v", s, back)
	}
}

// Goal: Validate accepts good schedules and names the problem in bad ones.
// Method: table of schedules.
func TestScheduleValidate(t *testing.T) {
	tests := []struct {
		name    string
		s       Schedule
		wantErr bool
		unknown bool
	}{
		{"empty", nil, false, false},
		{"ordered", Schedule{{0, "killLeader", time.Second}, {time.Second, "pauseRandom", time.Second}}, false, false},
		{"same start", Schedule{{time.Second, "killLeader", 0}, {time.Second, "pauseRandom", time.Second}}, false, false},
		{"alias", Schedule{{0, "partitionLeader", time.Second}}, false, false},
		{"unknown", Schedule{{0, "killLeader", time.Second}, {time.Second, "meteorStrike", time.Second}}, true, true},
		{"out of order", Schedule{{2 * time.Second, "killLeader", time.Second}, {time.Second, "pauseRandom", time.Second}}, true, false},
		{"negative at", Schedule{{-time.Second, "killLeader", time.Second}}, true, false},
		{"negative duration", Schedule{{0, "killLeader", -time.Second}}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate()
			if (err != nil) != tc.wantErr {
				t.Fatalf("Validate = %v, want error %v", err, tc.wantErr)
			}
			if errors.Is(err, ErrUnknownNemesis) != tc.unknown {
				t.Errorf("Validate = %v, want ErrUnknownNemesis %v", err, tc.unknown)
			}
		})
	}
}
