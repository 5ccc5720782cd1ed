package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

// Acquire takes resource for cmd.ClientID. With WaitMs > 0 it blocks: in
// FIFO policy in the replicated queue until granted or the wait elapses (then
// the queue entry is removed through the log); in throughput policy by
// retrying each time the lock frees. The proposer assigns the lease id and
// stamps the command with this node process, which holds the caller.
func (n *Node) Acquire(ctx context.Context, cmd lock.Command) (lock.Result, error) {
	if err := n.prepareAcquire(&cmd, lock.OpAcquire); err != nil {
		return lock.Result{}, err
	}
	if cmd.Policy == lock.Throughput && cmd.WaitMs > 0 {
		return n.acquireRacing(ctx, cmd)
	}
	if res, ok := n.followerGrant(cmd); ok {
		return res, nil
	}
	return awaitQueued(ctx, n, cmd, queuedWait[lock.Event]{
		listen: func(id lock.LeaseID) (<-chan lock.Event, func()) { return n.notify.waitGrant(id, cmd.Resource) },
		local:  func(id lock.LeaseID) (lock.Result, bool) { return n.localGrant(cmd.Resource, id) },
		ended: func(ev lock.Event, _ lock.LeaseID, position int) (lock.Result, error) {
			if ev.Kind == lock.EventGrant {
				return lock.Result{Granted: true, Lease: ev.Lease, LogTime: ev.LogTime}, nil
			}
			if ev.Deadlock {
				return lock.Result{Code: lock.Deadlock, LogTime: ev.LogTime}, &DeadlockError{}
			}
			// The state machine dropped the waiter: its deadline passed first,
			// or its node (for a retry that joined: the other attempt's) is gone.
			return lock.Result{Position: position, LogTime: ev.LogTime}, nil
		},
		cancel: lock.Command{Op: lock.OpCancel, Resource: cmd.Resource},
	})
}

// AcquireMany takes every resource of cmd.Resources (all on this group) at
// once or none (lock.OpAcquireMany). It waits as Acquire does: in FIFO
// policy in every queue until the one entry that grants them all, or until
// the wait elapses or the caller leaves (then the request leaves every
// queue through the log); in throughput policy by trying again each time
// the resource that blocked it frees. On a grant Result.Leases holds one
// lease per resource, in request order.
func (n *Node) AcquireMany(ctx context.Context, cmd lock.Command) (lock.Result, error) {
	if err := n.prepareAcquire(&cmd, lock.OpAcquireMany); err != nil {
		return lock.Result{}, err
	}
	if cmd.Policy == lock.Throughput && cmd.WaitMs > 0 {
		return n.acquireManyRacing(ctx, cmd)
	}
	return awaitQueued(ctx, n, cmd, queuedWait[[]lock.Event]{
		listen: func(id lock.LeaseID) (<-chan []lock.Event, func()) { return n.notify.waitMany(id, cmd.Resources) },
		local:  func(id lock.LeaseID) (lock.Result, bool) { return n.localManyGrant(cmd.Resources, id) },
		ended: func(evs []lock.Event, id lock.LeaseID, position int) (lock.Result, error) {
			if evs[0].Kind == lock.EventGrant {
				return manyGranted(cmd.Resources, id, evs)
			}
			if evs[0].Deadlock {
				return lock.Result{Code: lock.Deadlock, LogTime: evs[0].LogTime}, &DeadlockError{}
			}
			// Dropped from every queue by the state machine (deadline, hello,
			// suspects), in one entry.
			return lock.Result{Position: position, LogTime: evs[0].LogTime}, nil
		},
		cancel: lock.Command{Op: lock.OpCancel, Resources: cmd.Resources},
	})
}

// prepareAcquire makes cmd an acquire of op by this node process: a fresh
// lease id, and this process as the holder of its caller.
func (n *Node) prepareAcquire(cmd *lock.Command, op lock.Op) error {
	cmd.Op = op
	cmd.LeaseID = n.cfg.LeaseIDs()
	cmd.Host, cmd.Incarnation = n.cfg.ID, n.incarnation
	return n.cfg.Lock.Check(cmd)
}

// queuedWait is what differs between a FIFO acquire of one resource and
// of many at once while they wait: the event E that ends the wait (one
// event, or an entry's events for every resource) and the cancel that
// gives up.
type queuedWait[E any] struct {
	// listen registers for the end of request id's wait.
	listen func(id lock.LeaseID) (<-chan E, func())
	// local reports id's grant if this node has already applied it.
	local func(id lock.LeaseID) (lock.Result, bool)
	// ended answers from the event that ended id's wait; position is
	// where the request stood.
	ended func(ev E, id lock.LeaseID, position int) (lock.Result, error)
	// cancel names the resource(s) of the cancel that gives up.
	cancel lock.Command
}

// awaitQueued proposes acquire cmd and, when it queues, waits in FIFO
// order for its grant until the wait elapses or the caller leaves (then
// giveUp).
func awaitQueued[E any](ctx context.Context, n *Node, cmd lock.Command, w queuedWait[E]) (lock.Result, error) {
	waitingFor := cmd.LeaseID
	var ended <-chan E
	stop := func() {}
	if cmd.WaitMs > 0 {
		ended, stop = w.listen(waitingFor)
	}
	defer func() { stop() }()
	res, err := n.proposeAttempt(ctx, cmd)
	if err != nil {
		return res, err
	}
	if err := resultError(res); err != nil {
		return res, err
	}
	if !res.Queued {
		return res, nil
	}
	if res.Lease.ID != waitingFor {
		// A retry (same request id) found the first attempt still queued:
		// wait for that one. Check the local state after registering, in case
		// its grant was applied here before we listened.
		stop()
		waitingFor = res.Lease.ID
		ended, stop = w.listen(waitingFor)
		if granted, ok := w.local(waitingFor); ok {
			return granted, nil
		}
	}
	notifyQueued(ctx, waitingFor, res.Position)
	timer := time.NewTimer(time.Duration(cmd.WaitMs) * time.Millisecond)
	defer timer.Stop()
	select {
	case ev := <-ended:
		return w.ended(ev, waitingFor, res.Position)
	case <-timer.C:
	case <-ctx.Done():
	case <-n.done:
		// The request is queued: it may yet be granted.
		return lock.Result{}, fmt.Errorf("%w: %w while the request waited", ErrIndeterminate, ErrShutdown)
	}
	cancel := w.cancel
	cancel.LeaseID, cancel.Owner = waitingFor, cmd.LeaseID
	return n.giveUp(ctx, cancel, res.Position)
}

// giveUp ends this attempt's wait for the queued request cancel.LeaseID
// (cancel.Owner is the attempt): its wait elapsed or its caller left. The
// cancel goes through the log, so afterwards the answer is certain: granted
// first (then that grant is the answer, and the cancel claims it for the
// caller; when the caller has left, the same cancel releases it as this
// attempt's orphan instead), removed (from every queue of a multi request
// at once), or still queued for another attempt of the same request (a
// retry with a later deadline), which this caller no longer waits for.
func (n *Node) giveUp(ctx context.Context, cancel lock.Command, position int) (lock.Result, error) {
	callerGone := ctx.Err() != nil
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.ProposeTimeout)
	defer stop()
	// BugReleaseOnGiveUp is a mistake of the one-resource path only.
	releaseFound := n.bug(BugReleaseOnGiveUp) && cancel.Resource != ""
	cancel.CallerGone = callerGone && !releaseFound
	res, err := n.propose(cctx, cancel)
	if err != nil {
		if callerGone {
			// Nobody is left to retry it: this process does.
			n.queueRelease(cancel)
		}
		if errors.Is(err, ErrIndeterminate) {
			return res, err
		}
		// The request is in the queue and its cancel did not apply: it may
		// still be granted, so "surely not applied" would be a lie.
		return lock.Result{}, fmt.Errorf("%w: the request is queued and its cancel did not apply: %w", ErrIndeterminate, err)
	}
	if err := resultError(res); err != nil {
		return res, err
	}
	if callerGone {
		if res.Granted && releaseFound {
			_, _ = n.propose(cctx, lock.Command{Op: lock.OpRelease, Resource: cancel.Resource, LeaseID: cancel.LeaseID})
		}
		return lock.Result{LogTime: res.LogTime}, ctx.Err()
	}
	if res.Granted {
		return res, nil
	}
	res.Queued = false
	if res.Position == 0 {
		res.Position = position
	}
	return res, nil
}
