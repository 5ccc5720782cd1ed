package client

import (
	"context"
	"fmt"
	"slices"

	"github.com/lockstep/lockstep/core/ctxtime"
)

// attemptFunc performs one attempt of a call against endpoint.
type attemptFunc func(ctx context.Context, endpoint string) error

// retry runs attempt until it succeeds, fails with a 4xx, ctx ends or
// MaxAttempts is used up. An attempt goes to the leader of resource's shard
// when the cached shard map names it; otherwise to the next endpoint in turn
// from the one that answered last, so retries rotate across the whole
// cluster. An endpoint (or leader) that failed this call is not asked again
// while another has not failed, so a dead node costs one attempt even when
// the map still names it; once every endpoint has failed, the rotation
// starts over. A failed leader attempt refreshes the map. Callers make
// attempts idempotent (request ids).
func (c *Client) retry(ctx context.Context, op, resource string, attempt attemptFunc) error {
	start := int(c.preferred.Load())
	var last error
	failed := make(map[string]bool, len(c.endpoints))
	turn := 0 // the next endpoint in rotation is start+turn
	for i := range c.maxAttempts {
		if i > 0 {
			if err := ctxtime.Sleep(ctx, c.backoff.delay(i-1)); err != nil {
				return fmt.Errorf("%w (last error: %w)", err, last)
			}
		}
		if !slices.ContainsFunc(c.endpoints, func(e string) bool { return !failed[e] }) {
			clear(failed)
		}
		leader := c.leaderURL(resource)
		target, idx := leader, -1
		if leader == "" || failed[leader] {
			for target = ""; target == "" || failed[target]; turn++ {
				idx = (start + turn) % len(c.endpoints)
				target = c.endpoints[idx]
			}
		}
		err := attempt(ctx, target)
		if err == nil {
			if idx >= 0 {
				c.preferred.Store(uint32(idx))
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		}
		if !retryable(err) {
			return err
		}
		failed[target] = true
		if target == leader {
			c.refreshRoutes()
		}
		last = err
		c.log.Debug("lockstep: attempt failed", "op", op, "attempt", i+1, "endpoint", target, "err", err)
	}
	return fmt.Errorf("giving up after %d attempts: %w", c.maxAttempts, last)
}

// call runs the idempotent request req (for resource, "" for none) with retries and returns the reply
// of the attempt that succeeded (a failed attempt's partial decode is dropped).
func call[T any](ctx context.Context, c *Client, op, resource string, req request) (T, error) {
	var out T
	err := c.retry(ctx, op, resource, func(ctx context.Context, endpoint string) error {
		var reply T
		if err := c.roundTrip(ctx, endpoint, req, &reply); err != nil {
			return err
		}
		out = reply
		return nil
	})
	return out, err
}
