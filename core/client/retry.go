package client

import (
	"context"
	"fmt"
	"slices"

	"github.com/lockstep/lockstep/core/ctxtime"
)

// attemptFunc performs one attempt of a call against endpoint.
type attemptFunc func(ctx context.Context, endpoint string) error

// retry runs attempt until it succeeds, fails with a 4xx, ctx ends, the
// client is closed or MaxAttempts is used up, asking the endpoint the
// shard map's picker chooses each time (the shard's leader first, from
// the endpoint that answered last on). A failed leader attempt refreshes
// the map. Callers make attempts idempotent (request ids).
func (c *Client) retry(ctx context.Context, op, resource string, attempt attemptFunc) error {
	if err := c.closedErr(); err != nil {
		return err
	}
	ctx, stop := c.closable(ctx)
	defer stop()
	var last error
	p := c.routes.Picker(resource, int(c.preferred.Load()))
	for i := range c.maxAttempts {
		if i > 0 {
			if ctxtime.Sleep(ctx, c.backoff.delay(i-1)) != nil {
				return fmt.Errorf("%w (last error: %w)", c.ctxErr(ctx), last)
			}
		}
		target, leader := p.Next()
		err := attempt(ctx, target)
		if err == nil {
			if idx := slices.Index(c.endpoints, target); idx >= 0 {
				c.preferred.Store(uint32(idx))
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last error: %w)", c.ctxErr(ctx), err)
		}
		if !retryable(err) {
			return err
		}
		p.Failed(target)
		if leader {
			c.routes.Kick()
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
