package client

import (
	"context"
	"time"
)

// startKeepAlive runs keepAlive as background work of the client, so
// Client.Close ends it too (ctx is cancelled on Close, unhooked when the
// keep-alive ends).
func (l *Lease) startKeepAlive(ctx context.Context) {
	unhook := context.AfterFunc(l.c.bg.closing, l.keepAliveStop)
	started := l.c.goBackground(func() {
		defer unhook()
		l.keepAlive(ctx)
	})
	if !started {
		// Closed while the acquire was answered: nothing renews this lease.
		unhook()
		l.keepAliveStop()
		close(l.keepAliveDone)
	}
}

// keepAlive renews the lease TTL/2 after the send its validity counts
// from, until ctx ends, which happens on Release, when the lease is lost
// or on Client.Close.
// Transient failures are retried with backoff; they cannot go on forever
// because the expiry timer declares the lease lost at ValidUntil,
// cancelling ctx.
func (l *Lease) keepAlive(ctx context.Context) {
	defer close(l.keepAliveDone)
	timer := time.NewTimer(l.untilRenewDue())
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
			timer.Reset(l.untilRenewDue())
		case ctx.Err() != nil || l.Err() != nil:
			return
		default:
			l.c.log.Warn("lockstep: keep-alive renew failed", "resource", l.resource, "lease_id", l.id, "err", err)
			timer.Reset(l.c.backoff.delay(failures))
			failures++
		}
	}
}

// untilRenewDue is how long until the next renewal: half the TTL (or of
// the last expires_in, if shorter) after the send that validity counts
// from. Counting from that send rather than from the reply keeps the
// renewal well before ValidUntil when the grant or renew took long.
func (l *Lease) untilRenewDue() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	due := l.validFrom.Add(min(l.ttl, l.granted) / 2)
	return max(due.Sub(l.c.now()), 0)
}

// stopKeepAlive cancels the keep-alive and waits for its goroutine to exit.
func (l *Lease) stopKeepAlive() {
	if l.keepAliveStop == nil {
		return
	}
	l.keepAliveStop()
	<-l.keepAliveDone
}
