package client

import (
	"context"
	"errors"
	"github.com/lockstep/lockstep/core/ctxtime"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// Goal: retry delays grow exponentially, are capped, and jitter covers
// [0, ceiling]. Method: drive delay with extreme and real random sources.
func TestBackoffBounds(t *testing.T) {
	tests := []struct {
		retry       int
		wantCeiling time.Duration
	}{
		{0, 50 * time.Millisecond},
		{1, 100 * time.Millisecond},
		{3, 400 * time.Millisecond},
		{5, 1600 * time.Millisecond},
		{6, 2 * time.Second},
		{100, 2 * time.Second},
		{math.MaxInt32, 2 * time.Second},
	}
	for _, tt := range tests {
		b := newBackoff(50*time.Millisecond, 2*time.Second, rand.Int64N)
		if got := b.ceiling(tt.retry); got != tt.wantCeiling {
			t.Errorf("ceiling(%d) = %v, want %v", tt.retry, got, tt.wantCeiling)
		}
		b.randN = func(n int64) int64 { return n - 1 }
		if got := b.delay(tt.retry); got != tt.wantCeiling {
			t.Errorf("delay(%d) with max draw = %v, want %v", tt.retry, got, tt.wantCeiling)
		}
		b.randN = func(int64) int64 { return 0 }
		if got := b.delay(tt.retry); got != 0 {
			t.Errorf("delay(%d) with min draw = %v, want 0", tt.retry, got)
		}
		b = newBackoff(50*time.Millisecond, 2*time.Second, rand.Int64N)
		for range 200 {
			if d := b.delay(tt.retry); d < 0 || d > tt.wantCeiling {
				t.Fatalf("delay(%d) = %v outside [0, %v]", tt.retry, d, tt.wantCeiling)
			}
		}
	}
}

// Goal: the ceiling computation cannot overflow for huge caps. Method:
// a cap near MaxInt64 and many retries must stay positive and capped.
func TestBackoffCeilingNoOverflow(t *testing.T) {
	b := newBackoff(time.Nanosecond, time.Duration(math.MaxInt64-1), rand.Int64N)
	for retry := range 80 {
		if c := b.ceiling(retry); c <= 0 || c > b.max {
			t.Fatalf("ceiling(%d) = %v", retry, c)
		}
	}
}

// Goal: sleep returns early with the context's error when cancelled.
// Method: cancel before an hour-long sleep.
func TestSleepHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ctxtime.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("sleep = %v, want context.Canceled", err)
	}
}
