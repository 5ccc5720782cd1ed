package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// AcquireOptions parameterise Client.Acquire.
type AcquireOptions struct {
	// TTL is the lease time-to-live; at least 1ms (the wire unit).
	TTL time.Duration
	// Mode is exclusive or shared; empty lets the server choose (exclusive).
	Mode api.Mode
	// Wait is how long the server may queue the request; 0 is a try-lock.
	Wait time.Duration
	// RequestID makes the acquire idempotent across retries. Empty: a fresh
	// random 128-bit hex id, reused by every retry of this call.
	RequestID string
	// Policy is fifo or throughput; empty lets the server choose.
	Policy api.Policy
	// KeepAlive renews the lease every TTL/2 until it is released or lost.
	KeepAlive bool
}

func (o AcquireOptions) validate(resource string) error {
	switch {
	case resource == "":
		return errors.New("lockstep: acquire: empty resource")
	case o.TTL < time.Millisecond:
		return fmt.Errorf("lockstep: acquire %q: TTL %v below 1ms", resource, o.TTL)
	case o.Wait < 0:
		return fmt.Errorf("lockstep: acquire %q: negative wait %v", resource, o.Wait)
	case o.Mode != "" && o.Mode != api.Exclusive && o.Mode != api.Shared:
		return fmt.Errorf("lockstep: acquire %q: unknown mode %q", resource, o.Mode)
	case o.Policy != "" && o.Policy != api.FIFO && o.Policy != api.Throughput:
		return fmt.Errorf("lockstep: acquire %q: unknown policy %q", resource, o.Policy)
	}
	return nil
}

// Acquire asks for a lease on resource. A busy lock yields a
// *NotGrantedError (errors.Is ErrNotGranted); a 4xx yields an *APIError.
// Transient failures are retried across endpoints with the same request id
// and the wait that remains, so a grant whose reply was lost is returned by
// the retry instead of being granted twice. Cancelling ctx aborts the
// in-flight request, which makes the server drop it from its queue.
func (c *Client) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	if err := opts.validate(resource); err != nil {
		return nil, err
	}
	requestID := opts.RequestID
	if requestID == "" {
		requestID = newID()
	}
	// Validity counts from the first send: the server cannot have granted
	// earlier, whichever attempt's reply arrives.
	sent := c.now()
	var resp api.AcquireResponse
	err := c.retry(ctx, "acquire", func(ctx context.Context, endpoint string) error {
		waitLeft := remainingWait(opts.Wait, c.now().Sub(sent))
		req := request{
			method: http.MethodPost,
			path:   api.PathAcquire,
			body: api.AcquireRequest{
				Resource:  resource,
				ClientID:  c.clientID,
				TTL:       opts.TTL.Milliseconds(),
				Mode:      opts.Mode,
				Wait:      waitLeft.Milliseconds(),
				RequestID: requestID,
				Policy:    opts.Policy,
			},
			timeout: waitLeft + c.attemptTimeout,
		}
		var reply api.AcquireResponse
		if err := c.roundTrip(ctx, endpoint, req, &reply); err != nil {
			return err
		}
		resp = reply
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lockstep: acquire %q: %w", resource, err)
	}
	if !resp.Granted {
		return nil, &NotGrantedError{Resource: resource, QueuePosition: resp.QueuePosition}
	}
	if resp.LeaseID == "" || resp.ExpiresIn <= 0 {
		return nil, fmt.Errorf("lockstep: acquire %q: malformed grant (lease %q, expires_in %dms)", resource, resp.LeaseID, resp.ExpiresIn)
	}
	mode := cmp.Or(resp.Mode, opts.Mode, api.Exclusive)
	return newLease(c, leaseGrant{
		resource:   resource,
		id:         resp.LeaseID,
		mode:       mode,
		token:      resp.FencingToken,
		ttl:        opts.TTL,
		validUntil: c.validUntil(sent, resp.ExpiresIn),
		keepAlive:  opts.KeepAlive,
		ctx:        ctx,
	}), nil
}

// remainingWait is what is left of wait after elapsed. A blocking acquire
// stays blocking on retries (at least 1ms): the server answers a retry of a
// request it already decided with the recorded outcome anyway.
func remainingWait(wait, elapsed time.Duration) time.Duration {
	if wait <= 0 {
		return 0
	}
	return max(wait-elapsed, time.Millisecond)
}
