package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestJainIndex checks Jain's index on hand-computed share vectors.
func TestJainIndex(t *testing.T) {
	cases := []struct {
		name   string
		shares []int64
		want   float64
	}{
		{"empty", nil, 0},
		{"all-zero", []int64{0, 0, 0}, 0},
		{"equal", []int64{5, 5, 5, 5}, 1},
		{"one-takes-all", []int64{9, 0, 0, 0}, 0.25},
		{"one-two-three", []int64{1, 2, 3}, 36.0 / 42.0},
		{"half-starved", []int64{10, 10, 0, 0}, 0.5},
	}
	for _, tc := range cases {
		if got := JainIndex(tc.shares); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: got %v want %v", tc.name, got, tc.want)
		}
	}
}

// TestCountInversionsCases checks inversion counting on small hand cases.
func TestCountInversionsCases(t *testing.T) {
	cases := []struct {
		name   string
		events []GrantEvent
		slack  int64
		want   Inversions
	}{
		{"empty", nil, 0, Inversions{}},
		{"fifo", []GrantEvent{{1, 10}, {2, 20}, {3, 30}}, 0, Inversions{}},
		{"reversed", []GrantEvent{{1, 30}, {2, 20}, {3, 10}}, 0, Inversions{Pairs: 3, Overtakers: 2}},
		{"one-overtake", []GrantEvent{{1, 20}, {2, 10}, {3, 30}}, 0, Inversions{Pairs: 1, Overtakers: 1}},
		{"one-overtakes-two", []GrantEvent{{1, 20}, {2, 30}, {3, 10}}, 0, Inversions{Pairs: 2, Overtakers: 1}},
		{"no-overlap", []GrantEvent{{1, 2}, {3, 4}, {5, 6}}, 0, Inversions{}},
		{"same-request-time", []GrantEvent{{1, 20}, {1, 10}}, 0, Inversions{}},
		{"same-grant-time", []GrantEvent{{1, 10}, {2, 10}}, 0, Inversions{}},
		{"within-slack", []GrantEvent{{1, 30}, {2, 20}, {3, 10}}, 1, Inversions{Pairs: 1, Overtakers: 1}},
		{"slack-exact-gap-excluded", []GrantEvent{{1, 30}, {3, 10}}, 2, Inversions{}},
	}
	for _, tc := range cases {
		if got := CountInversions(tc.events, tc.slack); got != tc.want {
			t.Errorf("%s: got %+v want %+v", tc.name, got, tc.want)
		}
	}
}

// TestCountInversionsMatchesBruteForce compares the O(n log n) count with
// the O(n²) definition on random event sets, with ties, at several slacks.
func TestCountInversionsMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 200 {
		n := rng.IntN(60)
		events := make([]GrantEvent, n)
		for i := range events {
			req := rng.Int64N(50)
			events[i] = GrantEvent{RequestNs: req, GrantNs: req + rng.Int64N(40)}
		}
		for _, slack := range []int64{0, 1, 5, 30} {
			var want Inversions
			for _, b := range events {
				overtook := false
				for _, a := range events {
					if b.RequestNs-a.RequestNs > slack && b.GrantNs < a.GrantNs {
						want.Pairs++
						overtook = true
					}
				}
				if overtook {
					want.Overtakers++
				}
			}
			cp := append([]GrantEvent(nil), events...)
			if got := CountInversions(cp, slack); got != want {
				t.Fatalf("trial %d slack %d: got %+v want %+v (events %v)", trial, slack, got, want, events)
			}
		}
	}
}
