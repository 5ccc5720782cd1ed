package client

import (
	"context"
	"fmt"

	"github.com/lockstep/lockstep/core/ctxtime"
)

// attemptFunc performs one attempt of a call against endpoint.
type attemptFunc func(ctx context.Context, endpoint string) error

// retry runs attempt until it succeeds, fails with a 4xx, ctx ends, the
// client is closed or MaxAttempts is used up, asking the endpoint next
// picks each time. A failed leader attempt refreshes the map. Callers make
// attempts idempotent (request ids).
func (c *Client) retry(ctx context.Context, op, resource string, attempt attemptFunc) error {
	if err := c.closedErr(); err != nil {
		return err
	}
	ctx, stop := c.closable(ctx)
	defer stop()
	var last error
	p := picker{endpoints: c.endpoints, start: int(c.preferred.Load()), failedAt: make(map[string]int, len(c.endpoints))}
	for i := range c.maxAttempts {
		if i > 0 {
			if ctxtime.Sleep(ctx, c.backoff.delay(i-1)) != nil {
				return fmt.Errorf("%w (last error: %w)", c.ctxErr(ctx), last)
			}
		}
		leader := c.leaderURL(resource)
		target, idx := p.next(leader)
		err := attempt(ctx, target)
		if err == nil {
			if idx >= 0 {
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
		p.failedAt[target] = i
		if target == leader {
			c.refreshRoutes()
		}
		last = err
		c.log.Debug("lockstep: attempt failed", "op", op, "attempt", i+1, "endpoint", target, "err", err)
	}
	return fmt.Errorf("giving up after %d attempts: %w", c.maxAttempts, last)
}

// picker chooses the endpoint of each attempt of one call.
type picker struct {
	endpoints []string
	// start is the endpoint that answered the client last; the rotation
	// begins there, so a dead node is skipped once, not on every call.
	start int
	// turn is how far the rotation has gone from start.
	turn int
	// failedAt is the attempt in which an endpoint (or leader) last
	// failed this call.
	failedAt map[string]int
}

// next returns the endpoint to ask and its index in endpoints (-1 for a
// leader URL). The shard's leader goes first when the map names one that
// has not failed this call; then the endpoints in turn that have not; once
// every endpoint has failed, the one that failed longest ago. A failed
// member is thus never asked again before one that failed earlier, and a
// cached leader hint (refreshed in the background, so often naming a
// member that just died: followers name a dead leader until their election
// timeout) never beats a member that failed longer ago.
func (p *picker) next(leader string) (string, int) {
	if _, failed := p.failedAt[leader]; leader != "" && !failed {
		return leader, -1
	}
	oldest := -1
	for range p.endpoints {
		idx := (p.start + p.turn) % len(p.endpoints)
		p.turn++
		at, failed := p.failedAt[p.endpoints[idx]]
		if !failed {
			return p.endpoints[idx], idx
		}
		if oldest < 0 || at < p.failedAt[p.endpoints[oldest]] {
			oldest = idx
		}
	}
	return p.endpoints[oldest], oldest
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
