package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestHistogramQuantiles checks percentiles against exact nearest-rank values
// of the same samples, for several shapes, within the bucket error bound.
func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name string
		draw func() time.Duration
	}{
		{"small-exact", func() time.Duration { return time.Duration(rng.IntN(200)) }},
		{"uniform-ms", func() time.Duration { return time.Duration(rng.Int64N(int64(10 * time.Millisecond))) }},
		{"exponential", func() time.Duration { return time.Duration(rng.ExpFloat64() * float64(time.Millisecond)) }},
		{"bimodal", func() time.Duration {
			if rng.IntN(100) < 95 {
				return 200*time.Microsecond + time.Duration(rng.IntN(50_000))
			}
			return 40*time.Millisecond + time.Duration(rng.IntN(5_000_000))
		}},
	}
	quantiles := []float64{0, 0.5, 0.9, 0.99, 0.999, 1}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistogram()
			samples := make([]time.Duration, 50_000)
			var sum time.Duration
			for i := range samples {
				samples[i] = tc.draw()
				sum += samples[i]
				h.Record(samples[i])
			}
			slices.Sort(samples)
			for _, q := range quantiles {
				rank := max(int(math.Ceil(q*float64(len(samples)))), 1)
				exact := samples[rank-1]
				got := h.Quantile(q)
				tol := float64(exact)/(2*subCount) + 1
				if math.Abs(float64(got-exact)) > tol {
					t.Errorf("q=%v: got %v, exact %v (tolerance %.0fns)", q, got, exact, tol)
				}
			}
			if h.Max() != samples[len(samples)-1] {
				t.Errorf("max: got %v want %v", h.Max(), samples[len(samples)-1])
			}
			if want := sum / time.Duration(len(samples)); h.Mean() != want {
				t.Errorf("mean: got %v want %v", h.Mean(), want)
			}
		})
	}
}

// TestHistogramBuckets checks the bucket layout is contiguous and ordered,
// so every value lands in a bucket whose bounds contain it.
func TestHistogramBuckets(t *testing.T) {
	prevHi := uint64(0)
	for i := range numBuckets {
		lo, hi := bucketBounds(i)
		if i > 0 && lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, lo, prevHi)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d bounds [%d,%d] map to %d,%d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		prevHi = hi
	}
	if prevHi < math.MaxInt64 {
		t.Fatalf("buckets end at %d, below MaxInt64", prevHi)
	}
}

// TestHistogramEmptyAndConcurrent checks the empty case and that concurrent
// Record calls lose nothing (run with -race).
func TestHistogramEmptyAndConcurrent(t *testing.T) {
	h := NewHistogram()
	if h.Quantile(0.99) != 0 || h.Max() != 0 || h.Mean() != 0 || h.CDF(10) != nil {
		t.Fatal("empty histogram should report zeros")
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.Record(time.Duration(g*1000 + i))
			}
		})
	}
	wg.Wait()
	if h.Count() != 8000 || h.Max() != 7999 {
		t.Fatalf("count %d max %v, want 8000 and 7999ns", h.Count(), h.Max())
	}
	cdf := h.CDF(50)
	if len(cdf) != 50 || cdf[len(cdf)-1].Fraction != 1 {
		t.Fatalf("cdf: %d points, last %+v", len(cdf), cdf[len(cdf)-1])
	}
	for i := 1; i < len(cdf); i++ {
		if cdf[i].Ms < cdf[i-1].Ms || cdf[i].Fraction < cdf[i-1].Fraction {
			t.Fatalf("cdf not monotone at %d: %+v after %+v", i, cdf[i], cdf[i-1])
		}
	}
}
