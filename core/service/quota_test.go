package service

import (
	"errors"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/acl"
)

// TestRateBucket: goal — a namespace's bucket admits its burst at once,
// then one acquire per 1/rate, tells how long to wait (rounded up to whole
// seconds for Retry-After), keeps namespaces apart, and starts afresh
// when the quota changes. Method: a fake clock.
func TestRateBucket(t *testing.T) {
	var r rates
	q := acl.Quota{Namespace: "a", AcquiresPerSec: 2, Burst: 3}
	now := time.Unix(1000, 0)
	for i := range 3 {
		if err := r.take(q, now); err != nil {
			t.Fatalf("burst %d: %v", i, err)
		}
	}
	err := r.take(q, now)
	var rl *rateLimitedError
	if !errors.As(err, &rl) || rl.wait != 500*time.Millisecond || RetryAfter(err) != "1" {
		t.Fatalf("over the burst: %v", err)
	}
	if err := r.take(acl.Quota{Namespace: "b", AcquiresPerSec: 2, Burst: 3}, now); err != nil {
		t.Fatalf("another namespace: %v", err)
	}
	if err := r.take(q, now.Add(500*time.Millisecond)); err != nil {
		t.Fatalf("after 1/rate: %v", err)
	}
	if err := r.take(q, now.Add(600*time.Millisecond)); err == nil {
		t.Fatal("a second acquire within 1/rate")
	}
	slow := acl.Quota{Namespace: "a", AcquiresPerSec: 0.1, Burst: 1}
	if err := r.take(slow, now); err != nil {
		t.Fatalf("changed quota starts full: %v", err)
	}
	if err := r.take(slow, now); RetryAfter(err) != "10" {
		t.Fatalf("Retry-After at 0.1/s: %v (%s)", err, RetryAfter(err))
	}
}
