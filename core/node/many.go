package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

// AcquireMany takes every resource of cmd.Resources (all on this group) at
// once or none (lock.OpAcquireMany). It waits as Acquire does: in FIFO
// policy in every queue until the one entry that grants them all, or until
// the wait elapses or the caller leaves (then the request leaves every
// queue through the log); in throughput policy by trying again each time
// the resource that blocked it frees. On a grant Result.Leases holds one
// lease per resource, in request order.
func (n *Node) AcquireMany(ctx context.Context, cmd lock.Command) (lock.Result, error) {
	cmd.Op = lock.OpAcquireMany
	cmd.LeaseID = n.cfg.LeaseIDs()
	cmd.Host, cmd.Incarnation = n.cfg.ID, n.incarnation
	if err := n.cfg.Lock.Check(&cmd); err != nil {
		return lock.Result{}, err
	}
	if cmd.Policy == lock.Throughput && cmd.WaitMs > 0 {
		return n.acquireManyRacing(ctx, cmd)
	}
	waitingFor := cmd.LeaseID
	var grants <-chan []lock.Event
	stop := func() {}
	if cmd.WaitMs > 0 {
		grants, stop = n.notify.waitMany(waitingFor, cmd.Resources)
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
		// A retry (same request id) joined the first attempt, still queued:
		// wait for that one, checking the local state after registering in
		// case its grant was applied here before we listened.
		stop()
		waitingFor = res.Lease.ID
		grants, stop = n.notify.waitMany(waitingFor, cmd.Resources)
		if granted, ok := n.localManyGrant(cmd.Resources, waitingFor); ok {
			return granted, nil
		}
	}
	timer := time.NewTimer(time.Duration(cmd.WaitMs) * time.Millisecond)
	defer timer.Stop()
	select {
	case evs := <-grants:
		if evs[0].Kind == lock.EventGrant {
			return manyGranted(cmd.Resources, waitingFor, evs)
		}
		// Dropped from every queue by the state machine (deadline, hello,
		// suspects), in one entry.
		return lock.Result{Position: res.Position, LogTime: evs[0].LogTime}, nil
	case <-timer.C:
	case <-ctx.Done():
	case <-n.done:
		return lock.Result{}, fmt.Errorf("%w: %w while the request waited", ErrIndeterminate, ErrShutdown)
	}
	return n.giveUpMany(ctx, cmd.Resources, waitingFor, cmd.LeaseID, res.Position)
}

// giveUpMany is giveUp for a multi request: one cancel through the log
// takes it out of every queue at once, or finds it granted meanwhile
// (then reported, or released as this attempt's orphans when the caller
// has left), or still queued for another attempt of the same request.
func (n *Node) giveUpMany(ctx context.Context, resources []string, id, attempt lock.LeaseID, position int) (lock.Result, error) {
	callerGone := ctx.Err() != nil
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.ProposeTimeout)
	defer cancel()
	cmd := lock.Command{Op: lock.OpCancel, Resources: resources, LeaseID: id, Owner: attempt, CallerGone: callerGone}
	res, err := n.propose(cctx, cmd)
	if err != nil {
		if errors.Is(err, ErrIndeterminate) {
			return res, err
		}
		// Still queued, and the cancel did not apply: a grant may follow.
		return lock.Result{}, fmt.Errorf("%w: the request is queued and its cancel did not apply: %w", ErrIndeterminate, err)
	}
	if err := resultError(res); err != nil {
		return res, err
	}
	if callerGone {
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

// manyGranted builds the answer of a queued multi request from its grant
// events (one entry, one per resource).
func manyGranted(resources []string, base lock.LeaseID, evs []lock.Event) (lock.Result, error) {
	leases := make([]lock.Lease, len(resources))
	for _, ev := range evs {
		for j := range resources {
			if ev.Lease.ID == lock.ManyLeaseID(base, j) {
				leases[j] = ev.Lease
			}
		}
	}
	for j, l := range leases {
		if l.ID.IsZero() {
			// The state machine grants every part in one entry; a missing
			// one is a programming error, reported rather than hidden.
			return lock.Result{}, fmt.Errorf("%w: grant of multi request %s has no lease for %q", ErrIndeterminate, base, resources[j])
		}
	}
	return lock.Result{Granted: true, Lease: leases[0], Leases: leases, LogTime: evs[0].LogTime}, nil
}

// localManyGrant reports multi request base's grant if this node has
// already applied it and every lease is still held.
func (n *Node) localManyGrant(resources []string, base lock.LeaseID) (lock.Result, bool) {
	leases := make([]lock.Lease, 0, len(resources))
	var logTime int64
	n.fsm.read(func(s *lock.State) {
		logTime = s.Metrics().LogTime
		for j, name := range resources {
			for _, h := range s.Status(name).Holders {
				if h.ID == lock.ManyLeaseID(base, j) {
					leases = append(leases, h)
				}
			}
		}
	})
	if len(leases) != len(resources) {
		return lock.Result{}, false
	}
	return lock.Result{Granted: true, Lease: leases[0], Leases: leases, LogTime: logTime}, true
}

// acquireManyRacing is the throughput policy for a multi request: try all
// at once, and on refusal wait for the resource that blocked it to free,
// then try again. Never queued, so it never blocks anyone.
func (n *Node) acquireManyRacing(ctx context.Context, cmd lock.Command) (lock.Result, error) {
	wait := time.NewTimer(time.Duration(cmd.WaitMs) * time.Millisecond)
	defer wait.Stop()
	try := cmd
	try.WaitMs = 0
	for {
		res, err := n.propose(ctx, try)
		if err == nil {
			err = resultError(res)
		}
		if err != nil || res.Granted || res.Blocked == "" {
			return res, err
		}
		freed, stop := n.notify.waitFreed(res.Blocked)
		// Registered now: a free applied before this check shows here, a
		// later one is delivered.
		if st := n.LocalStatus(res.Blocked); len(st.Holders) == 0 && len(st.Queue) == 0 {
			stop()
			continue
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

// waitMany registers interest in the grant (or cancellation) of multi
// request base on resources: every such event of the entry that resolves
// it, at once.
func (n *notifier) waitMany(base lock.LeaseID, resources []string) (<-chan []lock.Event, func()) {
	ch := make(chan []lock.Event, 1)
	n.mu.Lock()
	set := n.many[base]
	if set == nil {
		set = make(map[chan []lock.Event]struct{})
		n.many[base] = set
		n.manyResources[base] = resources
	}
	set[ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.many[base], ch)
		if len(n.many[base]) == 0 {
			delete(n.many, base)
			delete(n.manyResources, base)
		}
		n.mu.Unlock()
	}
}

// restoredMany is restored for multi requests: one the restored state shows
// holding every resource is woken with its grants. Called with n.mu held.
func (n *notifier) restoredMany(status func(resource string) lock.Status, logTime int64) {
	for base, set := range n.many {
		resources := n.manyResources[base]
		evs := make([]lock.Event, 0, len(resources))
		for j, name := range resources {
			for _, h := range status(name).Holders {
				if h.ID == lock.ManyLeaseID(base, j) {
					evs = append(evs, lock.Event{Kind: lock.EventGrant, Resource: name, Lease: h, Queued: true, LogTime: logTime, Many: base})
				}
			}
		}
		if len(resources) == 0 || len(evs) != len(resources) {
			continue
		}
		for ch := range set {
			ch <- evs
		}
		delete(n.many, base)
		delete(n.manyResources, base)
	}
}

// deliverMany hands each waited-for multi request the queued grant or
// cancel events of this entry that name it. Called with n.mu held.
func (n *notifier) deliverMany(index uint64, events []lock.Event) {
	if len(n.many) == 0 {
		return
	}
	var batches map[lock.LeaseID][]lock.Event
	var order []lock.LeaseID
	for _, ev := range events {
		resolves := (ev.Kind == lock.EventGrant && ev.Queued) || ev.Kind == lock.EventCancel
		if ev.Many.IsZero() || !resolves || n.many[ev.Many] == nil {
			continue
		}
		if batches == nil {
			batches = make(map[lock.LeaseID][]lock.Event)
		}
		if _, ok := batches[ev.Many]; !ok {
			order = append(order, ev.Many)
		}
		batches[ev.Many] = append(batches[ev.Many], ev)
	}
	for _, base := range order {
		evs := batches[base]
		for ch := range n.many[base] {
			ch <- evs
		}
		delete(n.many, base)
		delete(n.manyResources, base)
		if n.onWake != nil {
			// Attempts of one request count as one woken request.
			n.onWake(evs[0].Resource, index, base, 1)
		}
	}
}

// CheckAcquireMany reports why cmd, a multi request, could never succeed
// on this group, without proposing it: a request split over shards is
// checked whole before any shard is asked.
func (n *Node) CheckAcquireMany(cmd lock.Command) error {
	cmd.Op = lock.OpAcquireMany
	// Stand-in for the id AcquireMany draws: Check wants one assigned.
	cmd.LeaseID = lock.LeaseID{1}
	cmd.Host = n.cfg.ID
	return n.cfg.Lock.Check(&cmd)
}
