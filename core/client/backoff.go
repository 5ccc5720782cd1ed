package client

import (
	"time"
)

// backoff computes retry delays: exponential growth capped at max, with
// full jitter so that clients retrying after a leader loss spread out.
type backoff struct {
	base, max time.Duration
	// randN returns a uniform integer in [0, n); injectable for tests.
	randN func(n int64) int64
}

func newBackoff(base, max time.Duration, randN func(int64) int64) backoff {
	return backoff{base: base, max: max, randN: randN}
}

// ceiling is min(max, base·2^retry), computed without overflow.
func (b backoff) ceiling(retry int) time.Duration {
	c := b.base
	for i := 0; i < retry; i++ {
		if c > b.max/2 {
			return b.max
		}
		c *= 2
	}
	return min(c, b.max)
}

// delay is the pause before retry number retry (0 for the first retry),
// uniform in [0, ceiling(retry)].
func (b backoff) delay(retry int) time.Duration {
	return time.Duration(b.randN(int64(b.ceiling(retry)) + 1))
}
