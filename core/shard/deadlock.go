package shard

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// Deadlocks across lock shards (issue 31). Each shard's state machine
// refuses a wait that would close a cycle inside it; a cycle through
// several shards is invisible to each. The metadata group's leader finds
// those: every DeadlockInterval it reads every shard's wait-for edges (by
// lease, lock.WaitEdge) from this member's replicas, each caught up to its
// leader's read index, and looks for cycles over their union by client.
//
// No false positive: edges of different shards are read at different
// moments, so one read could combine edges that never stood together. An
// edge by lease never comes back once gone, so an edge seen in two scans,
// the second begun after the first ended, stood all the time between them;
// only such edges count, so a cycle found stood whole at the moment
// between the two scans. A scan that finds a cycle among edges seen once
// starts the confirming scan at once, so a cycle is found within one
// interval and two scans of its forming. The victim's cancel checks again,
// in its own shard, that it still waits for the next client of the cycle.
//
// Each cycle is broken by cancelling its youngest waiter (the one this
// leader saw first most recently; ties by shard and lease id): that
// acquire is answered 409 deadlock, its own locks stay held.

// edgeKey names one edge by lease in one shard.
type edgeKey struct {
	shard   int
	waiter  lock.LeaseID
	blocker lock.LeaseID
}

// waiterKey names one queued request in one shard.
type waiterKey struct {
	shard  int
	waiter lock.LeaseID
}

// shardEdge is an edge with its shard.
type shardEdge struct {
	shard int
	lock.WaitEdge
}

// detectDeadlocks runs the detector until the host stops.
func (h *Host) detectDeadlocks() {
	t := time.NewTicker(h.cfg.DeadlockInterval)
	defer t.Stop()
	d := &detector{h: h, firstSeen: make(map[waiterKey]time.Time)}
	for {
		select {
		case <-h.done:
			return
		case <-t.C:
		}
		if !h.meta.IsLeader() {
			d.prev = nil
			continue
		}
		d.round()
	}
}

// detector is the state kept between scans.
type detector struct {
	h    *Host
	prev map[edgeKey]shardEdge
	// firstSeen is when each queued request was first seen waiting.
	firstSeen map[waiterKey]time.Time
}

// round scans, confirms with a second scan when the first shows a cycle
// among edges not yet confirmed, and breaks what stands.
func (d *detector) round() {
	for attempt := 0; attempt < 2; attempt++ {
		cur, ok := d.scan()
		if !ok {
			d.prev = nil
			return
		}
		stable := make([]shardEdge, 0, len(cur))
		for k, e := range cur {
			if _, seen := d.prev[k]; seen {
				stable = append(stable, e)
			}
		}
		d.prev = cur
		if len(d.breakCycles(stable)) > 0 {
			return
		}
		all := make([]shardEdge, 0, len(cur))
		for _, e := range cur {
			all = append(all, e)
		}
		if cycleOf(all) == nil {
			return // nothing to confirm
		}
	}
}

// scan reads every shard's edges; ok is false when one could not be read
// (then nothing is judged on it).
func (d *detector) scan() (map[edgeKey]shardEdge, bool) {
	now := time.Now()
	cur := make(map[edgeKey]shardEdge)
	seen := make(map[waiterKey]bool)
	for i, g := range d.h.Groups() {
		if g.Stats().Lock.Waiters == 0 {
			// Nothing queued here as far as this replica knows: no read
			// round. A replica behind its leader only leaves edges out,
			// which can hide a cycle for a scan, never make one up.
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), d.h.cfg.DeadlockInterval)
		edges, err := g.WaitEdges(ctx)
		cancel()
		if err != nil {
			d.h.cfg.Logger.Debug("deadlock detector: shard edges unread", "node", d.h.cfg.ID, "shard", i+1, "err", err)
			return nil, false
		}
		for _, e := range edges {
			cur[edgeKey{i + 1, e.Waiter, e.Blocker}] = shardEdge{i + 1, e}
			w := waiterKey{i + 1, e.Waiter}
			seen[w] = true
			if _, ok := d.firstSeen[w]; !ok {
				d.firstSeen[w] = now
			}
		}
	}
	for w := range d.firstSeen {
		if !seen[w] {
			delete(d.firstSeen, w)
		}
	}
	return cur, true
}

// breakCycles breaks every cycle among edges, one victim at a time, and
// returns the victims it cancelled.
func (d *detector) breakCycles(edges []shardEdge) []shardEdge {
	var victims []shardEdge
	for range len(edges) {
		cycle := cycleOf(edges)
		if cycle == nil {
			break
		}
		if d.missesCycles() {
			return victims
		}
		victim := cycle[0]
		for _, e := range cycle[1:] {
			if d.younger(e, victim) {
				victim = e
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), d.h.cfg.DeadlockInterval)
		g := d.h.Groups()[victim.shard-1]
		removed, err := g.BreakDeadlock(ctx, victim.WaitEdge)
		cancel()
		clients := make([]string, len(cycle))
		for i, e := range cycle {
			clients[i] = e.Client
		}
		d.h.cfg.Logger.Info("deadlock across shards broken", "node", d.h.cfg.ID, "cycle", strings.Join(clients, " -> "),
			"victim", victim.Client, "shard", victim.shard, "removed", removed, "err", err)
		if removed {
			victims = append(victims, victim)
		}
		// The victim's edges are gone (or the cycle broke meanwhile):
		// either way look for another cycle without them.
		edges = slices.DeleteFunc(edges, func(e shardEdge) bool { return e.shard == victim.shard && e.Waiter == victim.Waiter })
	}
	return victims
}

// younger reports whether a's waiter was first seen after b's (ties by
// shard and lease id, so every run picks alike).
func (d *detector) younger(a, b shardEdge) bool {
	ta, tb := d.firstSeen[waiterKey{a.shard, a.Waiter}], d.firstSeen[waiterKey{b.shard, b.Waiter}]
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	if a.shard != b.shard {
		return a.shard > b.shard
	}
	return strings.Compare(a.Waiter.String(), b.Waiter.String()) > 0
}

// cycleOf finds a cycle among edges by client and returns, for each step
// of it, the first edge (in edges' order) that makes it; nil for none.
func cycleOf(edges []shardEdge) []shardEdge {
	out := make(map[string][]shardEdge)
	for _, e := range edges {
		out[e.Client] = append(out[e.Client], e)
	}
	clients := make([]string, 0, len(out))
	for c := range out {
		clients = append(clients, c)
	}
	slices.Sort(clients)
	state := make(map[string]int) // 0 new, 1 on the path, 2 done
	var path []shardEdge
	var found []shardEdge
	var visit func(c string) bool
	visit = func(c string) bool {
		state[c] = 1
		for _, e := range out[c] {
			switch state[e.BlockerClient] {
			case 1:
				path = append(path, e)
				start := slices.IndexFunc(path, func(p shardEdge) bool { return p.Client == e.BlockerClient })
				found = slices.Clone(path[start:])
				return true
			case 0:
				path = append(path, e)
				if visit(e.BlockerClient) {
					return true
				}
				path = path[:len(path)-1]
			}
		}
		state[c] = 2
		return false
	}
	for _, c := range clients {
		if state[c] == 0 && visit(c) {
			return found
		}
	}
	return nil
}

// missesCycles is node.BugDeadlockMissCross: the testbed's bug mode, set
// on the lock shards' nodes (always false in a production build).
func (d *detector) missesCycles() bool {
	groups := d.h.Groups()
	return len(groups) > 0 && groups[0].BugOn(node.BugDeadlockMissCross)
}
