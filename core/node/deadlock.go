package node

import (
	"context"
	"fmt"

	"github.com/lockstep/lockstep/core/lock"
)

// WaitEdges returns this group's wait-for edges (lock.State.WaitEdges) as
// of a state at least as recent as the group leader's commit index when
// called: the replica first catches up to the leader's read index. The
// cross-shard deadlock detector reads every group's edges this way.
func (n *Node) WaitEdges(ctx context.Context) ([]lock.WaitEdge, error) {
	if _, err := n.CatchUp(ctx); err != nil {
		return nil, fmt.Errorf("wait edges of group %s: %w", n.cfg.Group, err)
	}
	var edges []lock.WaitEdge
	n.fsm.read(func(s *lock.State) { edges = s.WaitEdges() })
	return edges, nil
}

// BreakDeadlock removes the queued request of e (its waiter) to break a
// wait-for cycle across shards, if it still waits for e's blocker's client
// (an OpCancel with Command.Deadlock, lock's breakCycle): its callers are
// answered Deadlock. It reports whether the request was removed.
func (n *Node) BreakDeadlock(ctx context.Context, e lock.WaitEdge) (bool, error) {
	cmd := lock.Command{Op: lock.OpCancel, LeaseID: e.Waiter, Deadlock: true, ClientID: e.BlockerClient}
	if len(e.Resources) > 0 {
		cmd.Resources = e.Resources
	} else {
		cmd.Resource = e.Resource
	}
	res, err := n.simple(ctx, cmd)
	if err != nil {
		return false, err
	}
	return res.Position > 0, nil
}
