package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Lease is a granted lock. Its validity is judged on the client's clock:
// it ends at ValidUntil, the first send of the acquire (or of the last
// successful renew, including the one Acquire makes after a long wait)
// plus expires_in minus the safety margin. A client that was paused
// therefore learns that it may no longer hold the lock.
type Lease struct {
	c        *Client
	resource string
	id       string
	mode     api.Mode

	// renewMu serialises renewals so validUntil always stems from the
	// renewal the server applied last.
	renewMu sync.Mutex

	mu         sync.Mutex
	token      uint64
	ttl        time.Duration
	validUntil time.Time
	// validFrom is the send instant validUntil counts from and granted the
	// expires_in it adds; the keep-alive schedules the next renew from them.
	validFrom    time.Time
	granted      time.Duration
	lastRenewErr error // last transient renew failure, reported on expiry
	err          error // why the lease was lost; nil while held and after a clean release
	// lost is closed when the lease is lost, done when it ends either way
	// (lost, or released).
	lost chan struct{}
	done chan struct{}
	// expiry fires at validUntil on the runtime clock to close lost without
	// anyone polling Valid.
	expiry     *time.Timer
	released   bool
	releaseErr error
	// grace is the lease's grace window (AcquireOptions.Grace): lost only
	// that long after validUntil, not valid in between.
	grace time.Duration

	// Keep-alive handles; nil without keep-alive, immutable after newLease.
	keepAliveStop context.CancelFunc
	keepAliveDone chan struct{}
}

// leaseGrant carries what Acquire learnt into newLease.
type leaseGrant struct {
	resource     string
	id           string
	mode         api.Mode
	token        uint64
	ttl          time.Duration
	validFrom    time.Time
	granted      time.Duration
	validUntil   time.Time
	lastRenewErr error
	keepAlive    bool
	grace        time.Duration
	// ctx is the acquire context; the keep-alive keeps its values but not
	// its cancellation, which only bounds the acquire.
	ctx context.Context
}

func newLease(c *Client, g leaseGrant) *Lease {
	l := &Lease{
		c:            c,
		resource:     g.resource,
		id:           g.id,
		mode:         g.mode,
		token:        g.token,
		ttl:          g.ttl,
		validUntil:   g.validUntil,
		validFrom:    g.validFrom,
		granted:      g.granted,
		lastRenewErr: g.lastRenewErr,
		grace:        g.grace,
		lost:         make(chan struct{}),
		done:         make(chan struct{}),
	}
	var keepAliveCtx context.Context
	if g.keepAlive {
		keepAliveCtx, l.keepAliveStop = context.WithCancel(context.WithoutCancel(g.ctx))
		l.keepAliveDone = make(chan struct{})
	}
	// Armed under mu, after the keep-alive handles exist, so an immediately
	// firing timer finds everything it stops.
	l.mu.Lock()
	l.expiry = time.AfterFunc(l.lostAtLocked().Sub(c.now()), l.expire)
	l.mu.Unlock()
	if g.keepAlive {
		l.startKeepAlive(keepAliveCtx)
	}
	return l
}

// Resource returns the locked resource.
func (l *Lease) Resource() string { return l.resource }

// ID returns the server's lease id.
func (l *Lease) ID() string { return l.id }

// Mode returns the granted mode.
func (l *Lease) Mode() api.Mode { return l.mode }

// Token returns the fencing token; pass it to the protected resource.
func (l *Lease) Token() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.token
}

// ValidUntil returns the instant (client clock) after which the lease must
// be presumed lost.
func (l *Lease) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validUntil
}

// Valid reports whether the lease is neither lost, released nor past
// ValidUntil (a lease with a grace window is past ValidUntil, yet not lost,
// while in it).
func (l *Lease) Valid() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkExpiryLocked()
	return l.err == nil && !l.released && l.c.now().Before(l.validUntil)
}

// lostAtLocked is when the lease is presumed lost: ValidUntil, or for a
// lease with a grace window the window's end after it. Until then a renew
// may revive it.
func (l *Lease) lostAtLocked() time.Time { return l.validUntil.Add(l.grace) }

// Lost is closed once the lease is known or presumed lost: its validity
// passed without a renewal (closed by a runtime timer, or as soon as Valid
// or Err observe it on the configured clock), or the server refused a
// renew or release (not_holder). A clean Release does not close it. For a
// lease with a grace window "its validity" includes the window: in it the
// lease is not Valid (stop using its token) but a renew may revive it.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Done is closed once the lease ended, lost or released: like a context's
// Done, then Err tells which (nil: released).
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err returns why the lease was lost: ErrLeaseExpired or an *APIError
// matching ErrNotHolder. It is nil while the lease is valid and after a
// clean Release, and non-nil exactly when Lost is closed.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkExpiryLocked()
	return l.err
}

// expire is the expiry timer's callback.
func (l *Lease) expire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil || l.released {
		return
	}
	if left := l.lostAtLocked().Sub(l.c.now()); left > 0 {
		// Fired early: a renewal raced the timer, or Now is not the runtime clock.
		l.expiry.Reset(left)
		return
	}
	l.checkExpiryLocked()
}

// checkExpiryLocked marks the lease lost once the clock passed validUntil
// (and its grace window); a released lease no longer expires.
func (l *Lease) checkExpiryLocked() {
	if l.err != nil || l.released || l.c.now().Before(l.lostAtLocked()) {
		return
	}
	err := ErrLeaseExpired
	if l.lastRenewErr != nil {
		err = fmt.Errorf("%w (last renew error: %w)", ErrLeaseExpired, l.lastRenewErr)
	}
	l.loseLocked(err)
}

// loseLocked records why the lease was lost and ends it. Once lost, a
// lease never becomes valid again.
func (l *Lease) loseLocked(err error) {
	l.err = err
	close(l.lost)
	l.endLocked()
	l.c.log.Warn("lockstep: lease lost", "resource", l.resource, "lease_id", l.id, "err", err)
}

// endLocked wakes Done watchers and stops the timer and keep-alive; it
// runs once, when the lease is lost or released, whichever comes first.
func (l *Lease) endLocked() {
	close(l.done)
	l.expiry.Stop()
	if l.keepAliveStop != nil {
		l.keepAliveStop()
	}
}

// Renew extends the lease by ttl (0 reuses the lease's TTL). Validity moves
// to the renewal's first send plus the new expires_in minus the margin; a
// failed renewal never extends it. A not_holder reply marks the lease lost.
func (l *Lease) Renew(ctx context.Context, ttl time.Duration) error {
	if ttl < 0 || (ttl > 0 && ttl < time.Millisecond) {
		return fmt.Errorf("lockstep: renew %q: TTL %v below 1ms", l.resource, ttl)
	}
	l.renewMu.Lock()
	defer l.renewMu.Unlock()
	if err := l.renewableErr(); err != nil {
		return err
	}
	resp, sent, err := l.c.renew(ctx, l.resource, l.id, ttl)

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if errors.Is(err, ErrNotHolder) {
			if l.err == nil {
				l.loseLocked(err)
			}
			return err
		}
		l.lastRenewErr = err
		return err
	}
	if l.err != nil {
		// Presumed lost while the renewal was in flight; stay lost.
		return l.err
	}
	if l.released {
		return ErrReleased
	}
	l.validUntil = l.c.validUntil(sent, resp.ExpiresInMs)
	l.validFrom, l.granted = sent, msDuration(resp.ExpiresInMs)
	l.token = cmp.Or(resp.FencingToken, l.token)
	l.ttl = cmp.Or(ttl, l.ttl)
	// The server cuts a grace window longer than a renewed TTL to it.
	l.grace = min(l.grace, l.ttl)
	l.lastRenewErr = nil
	l.expiry.Reset(l.lostAtLocked().Sub(l.c.now()))
	return nil
}

// renewableErr is why the lease cannot be renewed: it was lost
// (Err) or released (ErrReleased); nil while valid.
func (l *Lease) renewableErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkExpiryLocked()
	if l.err == nil && l.released {
		return ErrReleased
	}
	return l.err
}

// renew sends one renew of lease id (with retries) and returns the reply
// and the instant it was first sent, which the new validity counts from.
func (c *Client) renew(ctx context.Context, resource, id string, ttl time.Duration) (api.RenewResponse, time.Time, error) {
	sent := c.now()
	req := request{
		method:  http.MethodPost,
		path:    api.PathRenew,
		body:    api.RenewRequest{Resource: resource, LeaseID: id, TTLMs: ttl.Milliseconds()},
		timeout: c.attemptTimeout,
	}
	resp, err := call[api.RenewResponse](ctx, c, "renew", resource, req)
	if err != nil {
		return resp, sent, fmt.Errorf("lockstep: renew %q lease %s: %w", resource, id, err)
	}
	return resp, sent, nil
}

// Release stops the keep-alive and releases the lease. A clean release
// closes Done but not Lost, and leaves Err nil. Releasing a lease the
// server no longer knows returns the not_holder *APIError and marks the
// lease lost with it; but when an earlier attempt of this Release failed
// in transit, a not_holder answer to the retry counts as success (that
// attempt may have released it, and the lease is gone either way). After a
// conclusive answer, further calls return the same result without
// contacting the server.
func (l *Lease) Release(ctx context.Context) error {
	l.stopKeepAlive()
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return l.releaseErr
	}
	l.mu.Unlock()

	req := request{
		method:  http.MethodPost,
		path:    api.PathRelease,
		body:    api.ReleaseRequest{Resource: l.resource, LeaseID: l.id},
		timeout: l.c.attemptTimeout,
	}
	inDoubt := false
	err := l.c.retry(ctx, "release", l.resource, func(ctx context.Context, endpoint string) error {
		var reply api.ReleaseResponse
		err := l.c.roundTrip(ctx, endpoint, req, &reply)
		// Only an attempt that may have released makes a later
		// not_holder its own echo; one surely not applied (503, 429) does
		// not, and then not_holder means the lease had already ended.
		if err != nil && retryable(err) && outcomeOpen(err) {
			inDoubt = true
		}
		return err
	})
	if err != nil && inDoubt && errors.Is(err, ErrNotHolder) {
		l.c.log.Warn("lockstep: release retry found no lease; an earlier attempt probably released it",
			"resource", l.resource, "lease_id", l.id)
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("lockstep: release %q lease %s: %w", l.resource, l.id, err)
		if !errors.Is(err, ErrNotHolder) {
			return err // outcome unknown; the caller may retry
		}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		// A concurrent Release concluded first; its answer is the one that counts.
		return l.releaseErr
	}
	l.released = true
	l.releaseErr = err
	switch {
	case l.err != nil:
		// Lost before the answer came: ended already.
	case err != nil:
		l.loseLocked(err)
	default:
		l.endLocked()
	}
	return err
}
