package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// isClosed reports whether ch is closed, without blocking.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Goal: Valid turns false exactly when the injected clock passes
// ValidUntil = first send + expires_in − margin, and Lost, Done and Err
// report it. Method: fake clock stepped across the boundary.
func TestLeaseValidityFollowsClock(t *testing.T) {
	_, srv := startFake(t)
	clock := newFakeClock()
	c := newTestClient(t, Config{Endpoints: []string{srv.URL}, Now: clock.Now})
	t0 := clock.Now()
	l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if want := t0.Add(9 * time.Second); !l.ValidUntil().Equal(want) {
		t.Fatalf("ValidUntil = %v, want %v", l.ValidUntil(), want)
	}
	clock.Advance(9*time.Second - time.Nanosecond)
	if !l.Valid() || isClosed(l.Lost()) || isClosed(l.Done()) {
		t.Fatal("lease invalid before ValidUntil")
	}
	clock.Advance(time.Nanosecond)
	if l.Valid() {
		t.Fatal("lease still valid at ValidUntil")
	}
	if !isClosed(l.Lost()) || !isClosed(l.Done()) || !errors.Is(l.Err(), ErrLeaseExpired) {
		t.Fatalf("Lost closed %v, Done closed %v, Err %v; want both closed and ErrLeaseExpired",
			isClosed(l.Lost()), isClosed(l.Done()), l.Err())
	}
	clock.Advance(-time.Hour)
	if l.Valid() {
		t.Fatal("lost lease became valid again")
	}
}

// Goal: validity counts from the FIRST attempt's send, not from the retry
// that got the reply. Method: the first attempt takes 2s on the fake clock
// and its reply is dropped; the retry returns the deduped grant.
func TestLeaseValidityCountsFromFirstSend(t *testing.T) {
	fs, srv := startFake(t)
	clock := newFakeClock()
	fs.setFault(func(path string, n int) fault {
		if path == api.PathAcquire && n == 0 {
			clock.Advance(2 * time.Second)
			return fault{drop: true}
		}
		return fault{}
	})
	c := newTestClient(t, fastRetries(Config{Endpoints: []string{srv.URL}, Now: clock.Now}))
	t0 := clock.Now()
	l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if want := t0.Add(9 * time.Second); !l.ValidUntil().Equal(want) {
		t.Fatalf("ValidUntil = %v after first send, want %v", l.ValidUntil().Sub(t0), want.Sub(t0))
	}
}

// Goal: a successful renew moves validity to its send time + expires_in −
// margin; a failed renew leaves it unchanged. Method: fake clock, renew
// once healthy, then against a server answering 503.
func TestLeaseRenewValidity(t *testing.T) {
	fs, srv := startFake(t)
	clock := newFakeClock()
	c := newTestClient(t, fastRetries(Config{Endpoints: []string{srv.URL}, Now: clock.Now, MaxAttempts: 2}))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	clock.Advance(5 * time.Second)
	renewSent := clock.Now()
	if err := l.Renew(ctx, 20*time.Second); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if want := renewSent.Add(19 * time.Second); !l.ValidUntil().Equal(want) {
		t.Fatalf("ValidUntil after renew = %v, want %v", l.ValidUntil(), want)
	}
	before := l.ValidUntil()
	fs.setFault(func(path string, _ int) fault {
		if path == api.PathRenew {
			return fault{status: 503, code: api.CodeUnavailable}
		}
		return fault{}
	})
	clock.Advance(time.Second)
	err = l.Renew(ctx, 0)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 503 {
		t.Fatalf("Renew error = %v, want 503", err)
	}
	if !l.ValidUntil().Equal(before) || !l.Valid() {
		t.Fatalf("failed renew changed validity: %v -> %v", before, l.ValidUntil())
	}
	if got := fs.callCount(api.PathRenew); got != 3 {
		t.Errorf("server saw %d renews, want 1 + 2 attempts", got)
	}
}

// Goal: a renew answered not_holder marks the lease lost with that error.
// Method: revoke the lease on the fake server, then renew.
func TestLeaseRenewNotHolderLosesLease(t *testing.T) {
	fs, srv := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{srv.URL}})
	ctx := context.Background()
	l, err := c.Acquire(ctx, "r", AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	fs.revoke("r", l.ID())
	if err := l.Renew(ctx, 0); !errors.Is(err, ErrNotHolder) {
		t.Fatalf("Renew = %v, want ErrNotHolder", err)
	}
	if l.Valid() || !isClosed(l.Lost()) || !isClosed(l.Done()) || !errors.Is(l.Err(), ErrNotHolder) {
		t.Fatalf("after not_holder: valid %v, lost %v, done %v, err %v", l.Valid(), isClosed(l.Lost()), isClosed(l.Done()), l.Err())
	}
	if got := fs.callCount(api.PathRenew); got != 1 {
		t.Errorf("not_holder renew retried: %d calls", got)
	}
}

// Goal: Release frees the lock and is idempotent; a clean release ends
// the lease (Done closed, Valid false, Renew ErrReleased) without calling
// it lost (Lost open, Err nil, even once its validity would have passed);
// releasing a lease the server lost returns the 409 error and marks it
// lost. Method: release healthy and revoked leases against the fake, on a
// fake clock.
func TestLeaseRelease(t *testing.T) {
	fs, srv := startFake(t)
	clock := newFakeClock()
	c := newTestClient(t, Config{Endpoints: []string{srv.URL}, Now: clock.Now})
	ctx := context.Background()

	l, err := c.Acquire(ctx, "a", AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if isClosed(l.Lost()) || !isClosed(l.Done()) || l.Err() != nil || l.Valid() {
		t.Fatalf("after release: lost %v done %v err %v valid %v; want open, closed, nil, false",
			isClosed(l.Lost()), isClosed(l.Done()), l.Err(), l.Valid())
	}
	if err := l.Renew(ctx, 0); !errors.Is(err, ErrReleased) {
		t.Fatalf("Renew after release = %v, want ErrReleased", err)
	}
	clock.Advance(2 * time.Minute)
	if isClosed(l.Lost()) || l.Err() != nil {
		t.Fatalf("released lease expired: lost %v err %v", isClosed(l.Lost()), l.Err())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if got := fs.callCount(api.PathRelease); got != 1 {
		t.Errorf("server saw %d releases, want 1", got)
	}
	if st, err := c.Status(ctx, "a"); err != nil || len(st.Holders) != 0 {
		t.Fatalf("Status after release = %+v, %v", st, err)
	}

	lost, err := c.Acquire(ctx, "b", AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	fs.revoke("b", lost.ID())
	err = lost.Release(ctx)
	var apiErr *APIError
	if !errors.Is(err, ErrNotHolder) || !errors.As(err, &apiErr) || apiErr.Status != 409 {
		t.Fatalf("Release of lost lease = %v, want 409 not_holder", err)
	}
	if !errors.Is(lost.Err(), ErrNotHolder) || !isClosed(lost.Lost()) || !isClosed(lost.Done()) {
		t.Errorf("after 409 release: Err %v, lost %v, done %v", lost.Err(), isClosed(lost.Lost()), isClosed(lost.Done()))
	}
	if err2 := lost.Release(ctx); !errors.Is(err2, ErrNotHolder) {
		t.Errorf("second Release of lost lease = %v", err2)
	}
}

// Goal: a release whose reply was lost still succeeds although the retry
// finds no lease. Method: fake applies the first release, drops its reply.
func TestLeaseReleaseLostReply(t *testing.T) {
	fs, srv := startFake(t)
	fs.setFault(func(path string, n int) fault {
		return fault{drop: path == api.PathRelease && n == 0}
	})
	c := newTestClient(t, fastRetries(Config{Endpoints: []string{srv.URL}}))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "r", AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release = %v, want nil", err)
	}
	if got := fs.callCount(api.PathRelease); got != 2 {
		t.Errorf("server saw %d releases, want 2", got)
	}
	if l.Err() != nil || isClosed(l.Lost()) || !isClosed(l.Done()) {
		t.Errorf("Err %v, lost %v, done %v; want a clean release", l.Err(), isClosed(l.Lost()), isClosed(l.Done()))
	}
}

// Goal: a retry's not_holder counts as the release's own echo only after
// an attempt that may have applied; after one surely not applied (503,
// 429) it means the lease had already ended, and the caller is told so.
// Method: the lease ends while the first release is answered each
// not-applied code; the retry finds no lease.
func TestLeaseReleaseNotHolderAfterNotApplied(t *testing.T) {
	for _, code := range []api.Code{api.CodeUnavailable, api.CodeOverloaded} {
		t.Run(string(code), func(t *testing.T) {
			fs, srv := startFake(t)
			c := newTestClient(t, fastRetries(Config{Endpoints: []string{srv.URL}}))
			ctx := context.Background()
			l, err := c.Acquire(ctx, "r", AcquireOptions{TTL: time.Minute})
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			fs.setFault(func(path string, n int) fault {
				if path == api.PathRelease && n == 0 {
					fs.revoke("r", l.ID())
					return fault{status: code.HTTPStatus(), code: code}
				}
				return fault{}
			})
			if err := l.Release(ctx); !errors.Is(err, ErrNotHolder) {
				t.Fatalf("Release = %v, want ErrNotHolder", err)
			}
		})
	}
}

// Goal: a release that cannot reach the server reports the failure and
// leaves the lease releasable. Method: 503 on every release, then healthy.
func TestLeaseReleaseUnavailableCanRetry(t *testing.T) {
	fs, srv := startFake(t)
	c := newTestClient(t, fastRetries(Config{Endpoints: []string{srv.URL}, MaxAttempts: 2}))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "r", AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	fs.setFault(func(string, int) fault { return fault{status: 503, code: api.CodeUnavailable} })
	if err := l.Release(ctx); err == nil || errors.Is(err, ErrNotHolder) {
		t.Fatalf("Release during outage = %v, want a 503 error", err)
	}
	fs.setFault(nil)
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release after outage: %v", err)
	}
}
