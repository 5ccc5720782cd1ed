package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKeyPickerFrequencies draws many keys and checks each key's frequency
// against its expected probability within 5 standard deviations.
func TestKeyPickerFrequencies(t *testing.T) {
	const keys, draws = 20, 400_000
	cases := []struct {
		name string
		dist string
		s    float64
		prob func(i int) float64
	}{
		{"uniform", "uniform", 0, func(int) float64 { return 1.0 / keys }},
		{"zipf-s0-is-uniform", "zipf", 0, func(int) float64 { return 1.0 / keys }},
		{"zipf-0.99", "zipf", 0.99, zipfProb(keys, 0.99)},
		{"zipf-1.5", "zipf", 1.5, zipfProb(keys, 1.5)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewKeyPicker(tc.dist, keys, tc.s)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			counts := make([]int, keys)
			for range draws {
				k := p.Pick(rng)
				if k < 0 || k >= keys {
					t.Fatalf("key %d out of range", k)
				}
				counts[k]++
			}
			for i, c := range counts {
				want := tc.prob(i)
				sd := math.Sqrt(draws * want * (1 - want))
				if math.Abs(float64(c)-draws*want) > 5*sd {
					t.Errorf("key %d: %d draws, expected %.0f ± %.0f", i, c, draws*want, 5*sd)
				}
			}
		})
	}
}

// zipfProb computes zipf probabilities independently of the picker.
func zipfProb(n int, s float64) func(int) float64 {
	var total float64
	for i := 1; i <= n; i++ {
		total += 1 / math.Pow(float64(i), s)
	}
	return func(i int) float64 { return 1 / math.Pow(float64(i+1), s) / total }
}

// TestZipfPickerRejectsBadInput checks argument validation.
func TestZipfPickerRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		n int
		s float64
	}{{0, 1}, {maxZipfKeys + 1, 1}, {10, -0.5}, {10, math.NaN()}, {10, math.Inf(1)}} {
		if _, err := NewZipfPicker(tc.n, tc.s); err == nil {
			t.Errorf("NewZipfPicker(%d, %v) accepted", tc.n, tc.s)
		}
	}
	if _, err := NewKeyPicker("pareto", 10, 1); err == nil {
		t.Error("unknown distribution accepted")
	}
	z, err := NewZipfPicker(5, 1)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for i := range 5 {
		sum += z.Probability(i)
	}
	if math.Abs(sum-1) > 1e-12 || z.Probability(0) <= z.Probability(1) {
		t.Errorf("probabilities sum to %v, p0=%v p1=%v", sum, z.Probability(0), z.Probability(1))
	}
}
