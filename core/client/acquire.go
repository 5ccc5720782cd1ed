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
//
// Validity of the returned lease: the server grants somewhere between the
// first send and the reply, and its expires_in counts from the log time at
// which the reply was decided, so first send + expires_in − margin is a
// safe lower bound on the server's expiry (reply arrival + expires_in is
// not). For a try-lock that bound is tight. A request that waited in the
// queue may have been granted long after its send, leaving the bound short
// or already past: whenever less than TTL/2 of it remains (or the reply has
// no expires_in), Acquire renews once before returning and validity counts
// from that renew's send instead. If that renew fails, Acquire keeps the
// first-send validity while some remains, else it returns an error matching
// ErrNotHolder or ErrLeaseExpired (the server's lease then lapses within
// its TTL). Acquire never returns a lease that is already invalid.
type AcquireOptions struct {
	// TTL is the lease time-to-live; at least 1ms (the wire unit).
	TTL time.Duration
	// Mode is exclusive or shared; empty lets the server choose (exclusive).
	Mode api.Mode
	// Wait is how long the server may queue the request; 0 is a try-lock.
	// A grant after more than about TTL/2 of waiting costs one renew (above).
	Wait time.Duration
	// RequestID names this acquire of this resource, so that calling again
	// with the same id and resource (after a crash, say) is answered from
	// the first call instead of granting twice. It is bound to the
	// resource (WireRequestID): the same id for another resource is a
	// separate request, never a reuse. Empty: a fresh random 128-bit hex
	// id per call. Either way every retry within the call reuses it.
	// At most 239 bytes.
	RequestID string
	// Policy is fifo or throughput; empty lets the server choose.
	Policy api.Policy
	// KeepAlive renews the lease until it is released or lost, each time
	// half the TTL after the send its current validity counts from.
	KeepAlive bool
	// Permits N (2..api.MaxPermits) asks for one permit of a counting
	// semaphore of N exclusive holders; every caller of the resource must
	// name the same N while it is held or waited for (else an *APIError
	// with code permits_mismatch). 0 or 1: a plain lock.
	Permits int
	// Grace (0..TTL, whole ms) keeps the lock from everyone else for that
	// long after the lease expires on the server (not after a release): a
	// renew in that window, the keep-alive's included, revives the lease
	// with its fencing token. The Lease is then not Valid past ValidUntil,
	// yet not lost until Grace later (see Lease.Lost). 0 is none.
	Grace time.Duration
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
	case o.Permits < 0 || o.Permits > api.MaxPermits:
		return fmt.Errorf("lockstep: acquire %q: permits %d not in 0..%d", resource, o.Permits, api.MaxPermits)
	case o.Permits > 1 && o.Mode == api.Shared:
		return fmt.Errorf("lockstep: acquire %q: a semaphore's permits are exclusive, not shared", resource)
	case o.Grace < 0 || o.Grace.Milliseconds() > o.TTL.Milliseconds():
		return fmt.Errorf("lockstep: acquire %q: grace %v outside 0..TTL (%v)", resource, o.Grace, o.TTL)
	}
	if err := validRequestID(o.RequestID); err != nil {
		return fmt.Errorf("lockstep: acquire %q: %w", resource, err)
	}
	return nil
}

// Acquire asks for a lease on resource and returns it valid (see
// AcquireOptions for how validity is counted). A busy lock yields a
// *NotGrantedError (errors.Is ErrNotGranted); a 4xx yields an *APIError.
// Transient failures are retried across endpoints with the same request id
// and the wait that remains, so a grant whose reply was lost is returned by
// the retry instead of being granted twice. Cancelling ctx aborts the
// in-flight request, which makes the server drop it from its queue.
func (c *Client) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	if err := opts.validate(resource); err != nil {
		return nil, err
	}
	requestID := c.requestID(opts.RequestID, resource)
	// Validity counts from the first send: the server cannot have granted
	// earlier, whichever attempt's reply arrives (see AcquireOptions).
	sent := c.now()
	var resp api.AcquireResponse
	err := c.retry(ctx, "acquire", resource, func(ctx context.Context, endpoint string) error {
		waitLeft := remainingWait(opts.Wait, c.now().Sub(sent))
		req := request{
			method: http.MethodPost,
			path:   api.PathAcquire,
			body: api.AcquireRequest{
				Resource:  resource,
				ClientID:  c.clientID,
				TTLMs:     opts.TTL.Milliseconds(),
				Mode:      opts.Mode,
				WaitMs:    waitLeft.Milliseconds(),
				RequestID: requestID,
				Policy:    opts.Policy,
				Permits:   int64(opts.Permits),
				GraceMs:   opts.Grace.Milliseconds(),
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
	// A missing expires_in (0) only means the validity is unknown; the
	// confirming renew below settles it.
	if resp.LeaseID == "" || resp.ExpiresInMs < 0 {
		return nil, fmt.Errorf("lockstep: acquire %q: malformed grant (lease %q, expires_in %dms)", resource, resp.LeaseID, resp.ExpiresInMs)
	}
	g := leaseGrant{
		resource:  resource,
		id:        resp.LeaseID,
		mode:      cmp.Or(resp.Mode, opts.Mode, api.Exclusive),
		token:     resp.FencingToken,
		ttl:       opts.TTL,
		validFrom: sent,
		granted:   msDuration(resp.ExpiresInMs),
		keepAlive: opts.KeepAlive,
		grace:     opts.Grace,
		ctx:       ctx,
	}
	g.validUntil = c.validUntil(sent, resp.ExpiresInMs)
	// Under TTL/2 left, a keep-alive would already be due and a caller
	// without one would get a lease that is (nearly) over: renew first.
	if g.validUntil.Sub(c.now()) < opts.TTL/2 {
		if g, err = c.confirm(ctx, g); err != nil {
			return nil, fmt.Errorf("lockstep: acquire %q: %w", resource, err)
		}
	}
	return newLease(c, g), nil
}

// confirm renews a fresh grant whose validity counted from the first send
// is short or unknown (typically after a wait in the queue), so validity
// counts from the renew's send instead. When the renew fails, the grant
// keeps its first-send validity if some is left; otherwise it is reported
// lost (never handed out already expired).
func (c *Client) confirm(ctx context.Context, g leaseGrant) (leaseGrant, error) {
	c.log.Debug("lockstep: renewing a grant with little validity left",
		"resource", g.resource, "lease_id", g.id, "valid_for", g.validUntil.Sub(c.now()))
	resp, sent, err := c.renew(ctx, g.resource, g.id, 0)
	switch {
	case err == nil:
		g.validFrom, g.granted = sent, msDuration(resp.ExpiresInMs)
		g.validUntil = c.validUntil(sent, resp.ExpiresInMs)
		g.token = cmp.Or(resp.FencingToken, g.token)
	case errors.Is(err, ErrNotHolder):
		return g, fmt.Errorf("granted lease %s lost before use: %w", g.id, err)
	default:
		g.lastRenewErr = err
	}
	if !c.now().Before(g.validUntil) {
		if err != nil {
			return g, fmt.Errorf("granted lease %s could not be confirmed: %w (last renew error: %w)", g.id, ErrLeaseExpired, err)
		}
		return g, fmt.Errorf("granted lease %s: %w", g.id, ErrLeaseExpired)
	}
	if err != nil {
		c.log.Warn("lockstep: confirming renew failed; keeping the validity counted from the acquire",
			"resource", g.resource, "lease_id", g.id, "err", err)
	}
	return g, nil
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
