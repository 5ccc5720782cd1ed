package client

import (
	"context"
	"fmt"
	"github.com/lockstep/lockstep/core/ctxtime"
)

// attemptFunc performs one attempt of a call against endpoint.
type attemptFunc func(ctx context.Context, endpoint string) error

// retry runs attempt until it succeeds, fails with a 4xx, ctx ends or
// MaxAttempts is used up. An attempt goes to the leader of resource's shard
// when the cached shard map names it (and it has not failed this call);
// otherwise attempt i goes to the i-th endpoint after the one that answered
// last, so retries rotate across the whole cluster and a dead node costs
// one attempt. A failed leader attempt refreshes the map. Callers make
// attempts idempotent (request ids).
func (c *Client) retry(ctx context.Context, op, resource string, attempt attemptFunc) error {
	start := int(c.preferred.Load())
	var last error
	leaderFailed := ""
	for i := range c.maxAttempts {
		if i > 0 {
			if err := ctxtime.Sleep(ctx, c.backoff.delay(i-1)); err != nil {
				return fmt.Errorf("%w (last error: %w)", err, last)
			}
		}
		idx := (start + i) % len(c.endpoints)
		target := c.endpoints[idx]
		leader := c.leaderURL(resource)
		if leader != "" && leader != leaderFailed {
			target = leader
		}
		err := attempt(ctx, target)
		if err == nil {
			if target == c.endpoints[idx] {
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
		if target == leader {
			leaderFailed = leader
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
