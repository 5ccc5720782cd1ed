// Package ctxtime holds the one context-aware wait the project needs:
// clients backing off, load generators pacing, nemeses holding a fault.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, whichever is first, and returns ctx's
// error in the second case. It uses a timer, so inside a synctest bubble
// virtual time jumps straight to the deadline.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
