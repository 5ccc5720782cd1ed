package node

import (
	"context"

	"github.com/lockstep/lockstep/core/lock"
)

// queuedKey carries an OnQueued callback in a context.
type queuedKey struct{}

// OnQueued returns a context under which Acquire calls fn once its request
// waits in the queue, with the lease id it waits for (the first attempt's,
// for a retry that joined it) and its 1-based position then. A streaming
// front end reports the position from there on; fn runs on the caller's
// goroutine and must not block.
func OnQueued(ctx context.Context, fn func(id lock.LeaseID, position int)) context.Context {
	return context.WithValue(ctx, queuedKey{}, fn)
}

// notifyQueued calls the OnQueued callback of ctx, if any.
func notifyQueued(ctx context.Context, id lock.LeaseID, position int) {
	if fn, ok := ctx.Value(queuedKey{}).(func(lock.LeaseID, int)); ok && fn != nil {
		fn(id, position)
	}
}
