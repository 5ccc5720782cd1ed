package service

import (
	"fmt"

	"github.com/lockstep/lockstep/core/lock"
)

// checkGrace refuses a grace window outside 0..ttl (bad_grace) before
// anything is proposed; the state machine checks it again on apply.
func checkGrace(graceMs, ttlMs int64) error {
	if graceMs < 0 || graceMs > ttlMs {
		return fmt.Errorf("%w: grace must be in 0..ttl (%d) ms, got %d", lock.ErrBadGrace, ttlMs, graceMs)
	}
	return nil
}
