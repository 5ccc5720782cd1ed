package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// maxZipfKeys bounds the CDF table a zipf picker allocates.
const maxZipfKeys = 1 << 22

// KeyPicker draws key indexes in [0, n) from some distribution. Implementations
// are immutable and safe to share; the randomness comes from the caller.
type KeyPicker interface {
	Pick(r *rand.Rand) int
}

// UniformPicker draws every key with the same probability.
type UniformPicker struct{ n int }

var _ KeyPicker = UniformPicker{}

// NewUniformPicker returns a picker over n >= 1 keys.
func NewUniformPicker(n int) (UniformPicker, error) {
	if n < 1 {
		return UniformPicker{}, fmt.Errorf("uniform picker: need at least 1 key, got %d", n)
	}
	return UniformPicker{n: n}, nil
}

// Pick implements KeyPicker.
func (u UniformPicker) Pick(r *rand.Rand) int { return r.IntN(u.n) }

// ZipfPicker draws key i with probability proportional to 1/(i+1)^s, so key 0
// is the hottest. Unlike math/rand's Zipf it accepts any s >= 0 (s = 0 is
// uniform; the commonly used s < 1 is allowed).
type ZipfPicker struct{ cdf []float64 }

var _ KeyPicker = (*ZipfPicker)(nil)

// NewZipfPicker builds the cumulative table for n keys and exponent s.
func NewZipfPicker(n int, s float64) (*ZipfPicker, error) {
	if n < 1 || n > maxZipfKeys {
		return nil, fmt.Errorf("zipf picker: keys must be in 1..%d, got %d", maxZipfKeys, n)
	}
	if s < 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return nil, fmt.Errorf("zipf picker: exponent must be a finite s >= 0, got %v", s)
	}
	cdf := make([]float64, n)
	var total float64
	for i := range cdf {
		total += math.Pow(float64(i+1), -s)
		cdf[i] = total
	}
	for i := range cdf {
		cdf[i] /= total
	}
	cdf[n-1] = 1 // guard against rounding leaving the top just below 1
	return &ZipfPicker{cdf: cdf}, nil
}

// Probability is the chance of drawing key i.
func (z *ZipfPicker) Probability(i int) float64 {
	if i == 0 {
		return z.cdf[0]
	}
	return z.cdf[i] - z.cdf[i-1]
}

// Pick implements KeyPicker.
func (z *ZipfPicker) Pick(r *rand.Rand) int {
	return sort.SearchFloat64s(z.cdf, r.Float64())
}

// NewKeyPicker returns the picker named by dist ("uniform" or "zipf").
func NewKeyPicker(dist string, n int, zipfS float64) (KeyPicker, error) {
	switch dist {
	case "", "uniform":
		return NewUniformPicker(n)
	case "zipf":
		return NewZipfPicker(n, zipfS)
	default:
		return nil, fmt.Errorf("unknown key distribution %q (want uniform or zipf)", dist)
	}
}
