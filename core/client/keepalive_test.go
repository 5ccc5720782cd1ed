package client

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// The keep-alive tests run in synctest bubbles: time is fake, and a
// goroutine still blocked when the bubble's function returns fails the
// test, which is the leak check.

// waitLost waits (in bubble time) for l to be lost and returns when that
// happened relative to start; it fails instead of hanging, since a lease
// that is never lost may keep a keep-alive busy forever.
func waitLost(t *testing.T, l *Lease, start time.Time) time.Duration {
	t.Helper()
	select {
	case <-l.Lost():
		return time.Since(start)
	case <-time.After(time.Hour):
		t.Fatal("lease not lost within an hour")
		return 0
	}
}

// Goal: keep-alive renews every TTL/2, keeps the lease valid, and stops
// (goroutine exits) on Release. Method: fake clock; compare renew instants.
func TestKeepAliveRenewsAtHalfTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		c := newInProcessClient(t, fs, Config{})
		start := time.Now()
		l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: 10 * time.Second, KeepAlive: true})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		time.Sleep(26 * time.Second)
		synctest.Wait()
		want := []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 20 * time.Second, 25 * time.Second}
		if got := fs.renewOffsets(start); !slices.Equal(got, want) {
			t.Fatalf("renews at %v, want %v", got, want)
		}
		if !l.Valid() {
			t.Fatalf("kept-alive lease invalid: %v", l.Err())
		}
		if want := start.Add(25*time.Second + 9*time.Second); !l.ValidUntil().Equal(want) {
			t.Errorf("ValidUntil = %v, want last renew + 9s", l.ValidUntil().Sub(start))
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatalf("Release: %v", err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := len(fs.renewOffsets(start)); got != len(want) {
			t.Errorf("%d renews after Release", got-len(want))
		}
	})
}

// Goal: keep-alive reports loss when a renew is answered not_holder.
// Method: revoke the lease between renewals; loss must surface at the
// next renewal (10s), with ErrNotHolder.
func TestKeepAliveLossOnNotHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		c := newInProcessClient(t, fs, Config{})
		start := time.Now()
		l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: 10 * time.Second, KeepAlive: true})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		time.Sleep(7 * time.Second)
		fs.revoke("r", l.ID())
		if at := waitLost(t, l, start); at != 10*time.Second {
			t.Errorf("loss reported at %v, want 10s", at)
		}
		if !errors.Is(l.Err(), ErrNotHolder) {
			t.Errorf("Err = %v, want ErrNotHolder", l.Err())
		}
		if err := l.Release(context.Background()); !errors.Is(err, ErrNotHolder) {
			t.Errorf("Release of lost lease = %v, want not_holder", err)
		}
	})
}

// Goal: keep-alive keeps retrying through an outage and reports loss
// exactly when validity ends (TTL − margin). Method: every renew answers
// 503; the lease must be lost at 9s with ErrLeaseExpired after several tries.
func TestKeepAliveLossOnProlongedUnavailability(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		fs.setFault(func(path string, _ int) fault {
			if path == api.PathRenew {
				return fault{status: 503, code: api.CodeUnavailable}
			}
			return fault{}
		})
		c := newInProcessClient(t, fs, Config{MaxAttempts: 2, BackoffBase: 100 * time.Millisecond, BackoffMax: 400 * time.Millisecond})
		start := time.Now()
		l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: 10 * time.Second, KeepAlive: true})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if at := waitLost(t, l, start); at != 9*time.Second {
			t.Errorf("loss reported at %v, want 9s", at)
		}
		if !errors.Is(l.Err(), ErrLeaseExpired) {
			t.Errorf("Err = %v, want ErrLeaseExpired", l.Err())
		}
		if got := fs.callCount(api.PathRenew); got < 4 {
			t.Errorf("only %d renew attempts during a 4s outage window", got)
		}
		synctest.Wait()
		calls := fs.callCount(api.PathRenew)
		time.Sleep(time.Minute)
		if got := fs.callCount(api.PathRenew); got != calls {
			t.Errorf("keep-alive kept renewing after loss: %d more calls", got-calls)
		}
	})
}

// Goal: a keep-alive lease survives a short outage: a renew that fails
// transiently is retried before validity ends. Method: renews answer 503
// until 8s (first renewal due at 5s, validity ends at 9s), then healthy.
func TestKeepAliveRecoversFromShortOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		start := time.Now()
		fs.setFault(func(path string, _ int) fault {
			if path == api.PathRenew && time.Since(start) < 8*time.Second {
				return fault{status: 503, code: api.CodeUnavailable}
			}
			return fault{}
		})
		c := newInProcessClient(t, fs, Config{MaxAttempts: 2, BackoffBase: 100 * time.Millisecond, BackoffMax: 400 * time.Millisecond})
		l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: 10 * time.Second, KeepAlive: true})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		time.Sleep(20 * time.Second)
		if !l.Valid() {
			t.Fatalf("lease lost despite recovery: %v", l.Err())
		}
		if got := fs.renewOffsets(start); len(got) == 0 || got[0] < 8*time.Second || got[0] > 9*time.Second {
			t.Errorf("first successful renew at %v, want within [8s, 9s]", got)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})
}

// Goal: a lease without keep-alive is presumed lost at ValidUntil even if
// nobody polls it, and no goroutine outlives it. Method: wait on Lost.
func TestLeaseExpiresWithoutKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		c := newInProcessClient(t, fs, Config{})
		start := time.Now()
		l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: 2 * time.Second})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if at := waitLost(t, l, start); at != 1800*time.Millisecond {
			t.Errorf("presumed lost at %v, want 1.8s", at)
		}
		if !errors.Is(l.Err(), ErrLeaseExpired) || fs.callCount(api.PathRenew) != 0 {
			t.Errorf("Err %v, renews %d", l.Err(), fs.callCount(api.PathRenew))
		}
	})
}

// Goal: the keep-alive is not bound to the acquire's context. Method:
// acquire with a context cancelled right after; renewals must continue.
func TestKeepAliveOutlivesAcquireContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		c := newInProcessClient(t, fs, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		l, err := c.Acquire(ctx, "r", AcquireOptions{TTL: 4 * time.Second, KeepAlive: true})
		cancel()
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		time.Sleep(11 * time.Second)
		synctest.Wait()
		if !l.Valid() || fs.callCount(api.PathRenew) != 5 {
			t.Fatalf("valid %v after %d renews, want valid after 5", l.Valid(), fs.callCount(api.PathRenew))
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})
}

// Goal: Release stops the keep-alive before contacting the server, so even
// a failed release lets the lease lapse instead of renewing it forever.
// Method: releases answer 503; afterwards no renew may arrive and the
// lease is presumed lost at its validity end.
func TestReleaseStopsKeepAliveEvenWhenItFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		fs.setFault(func(path string, _ int) fault {
			if path == api.PathRelease {
				return fault{status: 503, code: api.CodeUnavailable}
			}
			return fault{}
		})
		c := newInProcessClient(t, fs, Config{MaxAttempts: 2})
		l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: 10 * time.Second, KeepAlive: true})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		time.Sleep(6 * time.Second) // one renewal at 5s
		if err := l.Release(context.Background()); err == nil {
			t.Fatal("Release during outage succeeded")
		}
		renews := fs.callCount(api.PathRenew)
		time.Sleep(time.Minute) // not <-l.Lost(): a regression would renew forever
		synctest.Wait()
		if got := fs.callCount(api.PathRenew); got != renews || renews != 1 {
			t.Errorf("renews: %d before failed release, %d after", renews, got)
		}
		if !errors.Is(l.Err(), ErrLeaseExpired) {
			t.Errorf("Err = %v, want ErrLeaseExpired", l.Err())
		}
	})
}
