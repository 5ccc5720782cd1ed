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
	cmd.Op = lock.OpAcquire
	cmd.LeaseID = n.cfg.LeaseIDs()
	cmd.Host, cmd.Incarnation = n.cfg.ID, n.incarnation
	if err := n.cfg.Lock.Check(&cmd); err != nil {
		return lock.Result{}, err
	}
	if cmd.Policy == lock.Throughput && cmd.WaitMs > 0 {
		return n.acquireRacing(ctx, cmd)
	}
	if n.bug(BugFollowerGrant) {
		if res, ok := n.followerGrant(cmd); ok {
			return res, nil
		}
	}
	waitingFor := cmd.LeaseID
	var grants <-chan lock.Event
	stop := func() {}
	if cmd.WaitMs > 0 {
		grants, stop = n.notify.waitGrant(waitingFor, cmd.Resource)
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
		grants, stop = n.notify.waitGrant(waitingFor, cmd.Resource)
		if granted, ok := n.localGrant(cmd.Resource, waitingFor); ok {
			return granted, nil
		}
	}
	notifyQueued(ctx, waitingFor, res.Position)
	timer := time.NewTimer(time.Duration(cmd.WaitMs) * time.Millisecond)
	defer timer.Stop()
	select {
	case ev := <-grants:
		if ev.Kind == lock.EventGrant {
			return lock.Result{Granted: true, Lease: ev.Lease, LogTime: ev.LogTime}, nil
		}
		// The state machine dropped the waiter: its deadline passed first,
		// or its node (for a retry that joined: the other attempt's) is gone.
		return lock.Result{Position: res.Position, LogTime: ev.LogTime}, nil
	case <-timer.C:
	case <-ctx.Done():
	case <-n.done:
		// The request is queued: it may yet be granted.
		return lock.Result{}, fmt.Errorf("%w: %w while the request waited", ErrIndeterminate, ErrShutdown)
	}
	return n.giveUp(ctx, cmd.Resource, waitingFor, cmd.LeaseID, res.Position)
}

// giveUp ends this attempt's wait for the queued request id: its wait
// elapsed or its caller left. The cancel goes through the log, so afterwards
// the answer is certain: granted first (then that grant is the answer, and
// the cancel claims it for the caller; when the caller has left, the same
// cancel releases it as this attempt's orphan instead), removed, or still
// queued for another attempt of the same request (a retry with a later
// deadline), which this caller no longer waits for.
func (n *Node) giveUp(ctx context.Context, resource string, id, attempt lock.LeaseID, position int) (lock.Result, error) {
	callerGone := ctx.Err() != nil
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.ProposeTimeout)
	defer cancel()
	cmd := lock.Command{Op: lock.OpCancel, Resource: resource, LeaseID: id, Owner: attempt, CallerGone: callerGone}
	if n.bug(BugReleaseOnGiveUp) {
		cmd.CallerGone = false
	}
	res, err := n.propose(cctx, cmd)
	if err != nil {
		if callerGone {
			// Nobody is left to retry it: this process does.
			n.queueRelease(cmd)
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
		if res.Granted && n.bug(BugReleaseOnGiveUp) {
			_, _ = n.propose(cctx, lock.Command{Op: lock.OpRelease, Resource: resource, LeaseID: id})
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

// localGrant reports id's grant if this node has already applied it.
func (n *Node) localGrant(resource string, id lock.LeaseID) (lock.Result, bool) {
	var res lock.Result
	found := false
	n.fsm.read(func(s *lock.State) {
		st := s.Status(resource)
		for _, h := range st.Holders {
			if h.ID == id {
				res = lock.Result{Granted: true, Lease: h, LogTime: s.Metrics().LogTime}
				found = true
			}
		}
	})
	return res, found
}

// acquireRacing is the throughput policy: try, and on refusal wait for the
// resource to free and try again, racing every other waiter. Fast, unfair.
func (n *Node) acquireRacing(ctx context.Context, cmd lock.Command) (lock.Result, error) {
	wait := time.NewTimer(time.Duration(cmd.WaitMs) * time.Millisecond)
	defer wait.Stop()
	try := cmd
	try.WaitMs = 0
	for {
		freed, stop := n.notify.waitFreed(cmd.Resource)
		res, err := n.propose(ctx, try)
		if err == nil {
			err = resultError(res)
		}
		if err != nil || res.Granted {
			stop()
			return res, err
		}
		select {
		case <-freed:
			stop()
		case <-wait.C:
			stop()
			return res, nil
		case <-ctx.Done():
			stop()
			return res, ctx.Err()
		}
	}
}

// Release frees a lease; the queue head is granted in the same entry.
func (n *Node) Release(ctx context.Context, resource string, id lock.LeaseID) (lock.Result, error) {
	return n.simple(ctx, lock.Command{Op: lock.OpRelease, Resource: resource, LeaseID: id})
}

// Renew extends a live lease to now+ttl (ttlMs 0 keeps its TTL).
func (n *Node) Renew(ctx context.Context, resource string, id lock.LeaseID, ttlMs int64) (lock.Result, error) {
	cmd := lock.Command{Op: lock.OpRenew, Resource: resource, LeaseID: id, TTLMs: ttlMs}
	if n.bug(BugLocalRenew) {
		if res, ok, err := n.localRenew(cmd); ok {
			return res, err
		}
	}
	return n.simple(ctx, cmd)
}

// Status reads resource through the log, so the answer is linearizable.
func (n *Node) Status(ctx context.Context, resource string) (lock.Result, error) {
	return n.simple(ctx, lock.Command{Op: lock.OpStatus, Resource: resource})
}

func (n *Node) simple(ctx context.Context, cmd lock.Command) (lock.Result, error) {
	if err := n.cfg.Lock.Check(&cmd); err != nil {
		return lock.Result{}, err
	}
	res, err := n.propose(ctx, cmd)
	if err != nil {
		return res, err
	}
	return res, resultError(res)
}
