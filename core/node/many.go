package node

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

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
