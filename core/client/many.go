package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/lockstep/lockstep/core/api"
)

// AcquireManyOptions parameterise Client.AcquireMany: those of Acquire,
// applied to every resource, and the order for resources on several
// shards.
type AcquireManyOptions struct {
	AcquireOptions
	// Order api.OrderCanonical lets the resources span shards (taken shard
	// by shard, not atomically; see README); empty requires one shard.
	Order api.Order
}

// AcquireMany takes every resource at once or none and returns one lease
// per resource, in the order given. Each lease is an ordinary Lease: its
// validity counts from the first send (see AcquireOptions), it renews and
// releases on its own, and with KeepAlive each keeps itself alive. A busy
// resource yields a *NotGrantedError naming it; resources on several
// shards without OrderCanonical yield an *APIError with code cross_shard.
// Retries reuse the request id, as Acquire's do; a caller's RequestID is
// bound to the list of resources, in order.
func (c *Client) AcquireMany(ctx context.Context, resources []string, opts AcquireManyOptions) ([]*Lease, error) {
	if len(resources) == 0 || len(resources) > api.MaxManyResources {
		return nil, fmt.Errorf("lockstep: acquire_many: %d resources, want 1..%d", len(resources), api.MaxManyResources)
	}
	for _, r := range resources {
		if err := opts.validate(r); err != nil {
			return nil, err
		}
	}
	requestID := c.requestID(opts.RequestID, resources...)
	sent := c.now()
	var resp api.AcquireManyResponse
	// Routed by the first resource: on one shard its leader serves all.
	err := c.retry(ctx, "acquire_many", resources[0], func(ctx context.Context, endpoint string) error {
		waitLeft := remainingWait(opts.Wait, c.now().Sub(sent))
		req := request{
			method: http.MethodPost,
			path:   api.PathAcquireMany,
			body: api.AcquireManyRequest{
				Resources: resources, ClientID: c.clientID, TTLMs: opts.TTL.Milliseconds(), Mode: opts.Mode,
				WaitMs: waitLeft.Milliseconds(), RequestID: requestID, Policy: opts.Policy, Order: opts.Order,
				GraceMs: opts.Grace.Milliseconds(),
			},
			timeout: waitLeft + c.attemptTimeout,
		}
		var reply api.AcquireManyResponse
		if err := c.roundTrip(ctx, endpoint, req, &reply); err != nil {
			return err
		}
		resp = reply
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lockstep: acquire_many %q: %w", resources, err)
	}
	if !resp.Granted {
		return nil, &NotGrantedError{Resource: cmp.Or(resp.Blocked, resources[0]), QueuePosition: resp.QueuePosition}
	}
	if len(resp.Leases) != len(resources) {
		return nil, fmt.Errorf("lockstep: acquire_many %q: malformed grant (%d leases)", resources, len(resp.Leases))
	}
	leases := make([]*Lease, 0, len(resources))
	for i, l := range resp.Leases {
		if l.Resource != resources[i] || l.LeaseID == "" || l.ExpiresInMs < 0 {
			err = fmt.Errorf("lockstep: acquire_many %q: malformed lease %d %+v", resources, i, l)
			break
		}
		g := leaseGrant{
			resource: l.Resource, id: l.LeaseID, mode: cmp.Or(opts.Mode, api.Exclusive), token: l.FencingToken,
			ttl: opts.TTL, validFrom: sent, granted: msDuration(l.ExpiresInMs), keepAlive: opts.KeepAlive, grace: opts.Grace, ctx: ctx,
		}
		g.validUntil = c.validUntil(sent, l.ExpiresInMs)
		if g.validUntil.Sub(c.now()) < opts.TTL/2 {
			if g, err = c.confirm(ctx, g); err != nil {
				err = fmt.Errorf("lockstep: acquire_many %q: %w", resources, err)
				break
			}
		}
		leases = append(leases, newLease(c, g))
	}
	if err != nil {
		// All or none for the caller too: give back what is already valid;
		// the rest lapses within its TTL.
		for _, l := range leases {
			err = errors.Join(err, l.Release(context.WithoutCancel(ctx)))
		}
		return nil, err
	}
	return leases, nil
}
