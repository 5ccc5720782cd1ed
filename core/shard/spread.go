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
	for {
		select {
		case <-h.done:
			return
		case <-t.C:
		}
		if from, to, ok := h.overLed(); ok {
			if err := from.TransferLeadership(to); err != nil {
				h.cfg.Logger.Debug("leader spread", "node", h.cfg.ID, "to", to.ID, "err", err)
			}
		}
	}
}

// overLed picks one shard this member leads beyond its share and the
// member to hand it to, if any.
func (h *Host) overLed() (*node.Node, node.Peer, bool) {
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
	for _, p := range h.cfg.Peers {
		if p.ID != h.cfg.ID && led[p.ID] < fewest && h.reachable(mine[0], p.ID) {
			to, fewest = p, led[p.ID]
		}
	}
	if to.ID == "" || fewest+1 > share {
		return nil, node.Peer{}, false
	}
	return mine[len(mine)-1], to, true
}

// reachable reports whether the leader g's heartbeats to member id
// succeed (SinceContact counts only failing ones): a transfer to a member
// that is down would only cost an election.
func (h *Host) reachable(g *node.Node, id string) bool {
	for _, m := range g.Members() {
		if m.ID == id {
			return m.ContactKnown && m.Role != "unreachable" && m.SinceContact < time.Second
		}
	}
	return false
}
