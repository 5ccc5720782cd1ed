package client

import (
	"context"
	"time"
)

// keepAlive renews the lease every TTL/2 until ctx ends, which happens on
// Release or when the lease is lost. Transient failures are retried with
// backoff; they cannot go on forever because the expiry timer declares the
// lease lost at ValidUntil, cancelling ctx.
func (l *Lease) keepAlive(ctx context.Context) {
	defer close(l.keepAliveDone)
	timer := time.NewTimer(l.renewInterval())
	defer timer.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		err := l.Renew(ctx, 0)
		switch {
		case err == nil:
			failures = 0
			timer.Reset(l.renewInterval())
		case ctx.Err() != nil || l.Err() != nil:
			return
		default:
			l.c.log.Warn("lockstep: keep-alive renew failed", "resource", l.resource, "lease_id", l.id, "err", err)
			timer.Reset(l.c.backoff.delay(failures))
			failures++
		}
	}
}

// renewInterval is half the lease's current TTL.
func (l *Lease) renewInterval() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ttl / 2
}

// stopKeepAlive cancels the keep-alive and waits for its goroutine to exit.
func (l *Lease) stopKeepAlive() {
	if l.keepAliveStop == nil {
		return
	}
	l.keepAliveStop()
	<-l.keepAliveDone
}
