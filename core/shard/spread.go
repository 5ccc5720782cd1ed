package shard

import (
	"time"

	"github.com/lockstep/lockstep/core/node"
)

// spread keeps this member from leading more than ceil(shards/members)
// lock shards: every member hosts every shard, so each sees all leaders
// and can tell when it leads too many; it then hands one shard at a time to
// the member leading the fewest. Elections alone pile leaders on whichever
// member started first or survived a failover.
func (h *Host) spread() {
	t := time.NewTicker(h.cfg.SpreadInterval)
	defer t.Stop()
	// healthy holds, per member, since when every group led here has
	// reached it: a member back from a crash is still catching up, and
	// raft refuses a group's entries while it transfers leadership to a
	// member that is behind.
	healthy := make(map[string]time.Time, len(h.cfg.Peers))
	for {
		select {
		case <-h.done:
			return
		case <-t.C:
		}
		if from, to, ok := h.overLed(healthy, time.Now()); ok {
			if err := from.TransferLeadership(to); err != nil {
				h.cfg.Logger.Debug("leader spread", "node", h.cfg.ID, "to", to.ID, "err", err)
			}
		}
	}
}

// spreadSettleTicks is how many spread intervals a member must have been
// reachable from every group led here before it is handed one.
const spreadSettleTicks = 4

// overLed picks one shard this member leads beyond its share and the
// member to hand it to, if any; it updates healthy (see spread).
func (h *Host) overLed(healthy map[string]time.Time, now time.Time) (*node.Node, node.Peer, bool) {
	groups := h.Groups()
	members := len(h.cfg.Peers)
	if members < 2 || len(groups) < 2 {
		return nil, node.Peer{}, false
	}
	share := (len(groups) + members - 1) / members
	led := make(map[string]int, members)
	var mine []*node.Node
	for _, g := range groups {
		leader, ok := g.Leader()
		if !ok {
			return nil, node.Peer{}, false // an election is running: wait for it
		}
		led[leader.ID]++
		if leader.ID == h.cfg.ID {
			mine = append(mine, g)
		}
	}
	if len(mine) <= share {
		return nil, node.Peer{}, false
	}
	var to node.Peer
	fewest := len(groups) + 1
	settle := spreadSettleTicks * h.cfg.SpreadInterval
	for _, p := range h.cfg.Peers {
		if p.ID == h.cfg.ID {
			continue
		}
		if !h.reachable(mine, p.ID) {
			delete(healthy, p.ID)
			continue
		}
		since, ok := healthy[p.ID]
		if !ok {
			healthy[p.ID], since = now, now
		}
		if led[p.ID] < fewest && now.Sub(since) >= settle {
			to, fewest = p, led[p.ID]
		}
	}
	if to.ID == "" || fewest+1 > share {
		return nil, node.Peer{}, false
	}
	// A group whose last transfer to this member failed in this term
	// would stall if asked again (node.ErrTransferPending).
	for i := len(mine) - 1; i >= 0; i-- {
		if mine[i].CanTransferTo(to.ID) {
			return mine[i], to, true
		}
	}
	return nil, node.Peer{}, false
}

// reachable reports whether the heartbeats of every group in mine (all
// led here) reach member id without failing: a transfer to a member that
// is down would only cost an election, and worse, raft refuses the group's
// new entries until its TimeoutNow RPC to the dead member times out. A
// group led only since a moment ago has not yet seen a crashed member's
// heartbeats fail; one led for longer has.
func (h *Host) reachable(mine []*node.Node, id string) bool {
	for _, g := range mine {
		if !contacted(g, id) {
			return false
		}
	}
	return true
}

// contacted reports whether leader g's heartbeats to member id succeed
// (SinceContact is non-zero only while they fail).
func contacted(g *node.Node, id string) bool {
	for _, m := range g.Members() {
		if m.ID == id {
			return m.ContactKnown && m.Role != "unreachable" && m.SinceContact == 0
		}
	}
	return false
}
