package scenarios

import (
	"context"
	"time"

	lockclient "github.com/lockstep/lockstep/core/client"
)

// extendWait is an acquire whose caller, part way through its wait,
// decides to wait longer: it asks again under the same request id with a
// longer wait while the first call still waits (a job runner whose short
// foreground wait for a lock turns into a background one). The first call
// then ends when its own wait elapses, and the server must keep the
// request queued for the second. The answer is the second call's, or the
// first's when only that one was granted (both name the same lease).
// Neither keeps its lease alive: opts.KeepAlive must be off.
func (wl *workload) extendWait(ctx context.Context, cl *client, resource string, opts lockclient.AcquireOptions) (*lockclient.Lease, error) {
	longer := opts
	longer.Wait = 2*opts.Wait + between(cl.rng, wl.w.WaitMs)
	// The second call goes out in the first half of the first one's wait.
	after := opts.Wait/8 + time.Duration(cl.rng.Int64N(int64(opts.Wait)/2+1))

	type answer struct {
		lease *lockclient.Lease
		err   error
	}
	firstDone := make(chan answer, 1)
	go func() {
		l, err := wl.acquire(ctx, cl, resource, opts, 0)
		firstDone <- answer{l, err}
	}()
	t := time.NewTimer(after)
	select {
	case a := <-firstDone:
		t.Stop()
		return a.lease, a.err
	case <-t.C:
	}
	lease, err := wl.acquire(ctx, cl, resource, longer, 0)
	a := <-firstDone
	if err != nil && a.err == nil {
		return a.lease, nil
	}
	return lease, err
}
