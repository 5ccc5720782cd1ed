package service

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/shard"
)

// Ready is the check of /readyz (the gRPC health service reports it too):
// true with the first shard's health while every lock shard on this member
// follows a leader it heard from within ReadyLeaderContact, has caught up
// with that leader once since this process started (node.CatchUp: applied
// up to the leader's read index) and has applied to within ReadyApplyLag
// entries of the leader's commit index, asked now; else false with the
// health of the first shard that is not, its Error saying why. The shards
// are checked in parallel within ReadyTimeout. A member without a quorum
// has no leader for long, so it drops out; a restarted one is not ready
// while it holds only what it found on disk.
func (s *Service) Ready(ctx context.Context) (api.Health, bool) {
	groups := s.host.Groups()
	if len(groups) == 0 {
		return api.Health{Node: s.host.ID(), Status: "unavailable", Error: "not ready: " + shard.ErrNotReady.Error(), Code: api.CodeUnavailable}, false
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyTimeout)
	defer cancel()
	reasons := make([]string, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Go(func() { reasons[i] = s.notReady(ctx, g) })
	}
	wg.Wait()
	for i, reason := range reasons {
		if reason == "" {
			continue
		}
		if len(groups) > 1 {
			reason = fmt.Sprintf("shard %d: %s", i+1, reason)
		}
		h := health(groups[i])
		h.Status, h.Error, h.Code = "unavailable", "not ready: "+reason, api.CodeUnavailable
		return h, false
	}
	return health(groups[0]), true
}

// notReady says why lock shard n is not ready, "" when it is.
func (s *Service) notReady(ctx context.Context, n *node.Node) string {
	since, ok := n.LeaderContact()
	if !ok {
		return "no leader known"
	}
	if since > s.cfg.ReadyLeaderContact {
		leader, _ := n.Leader()
		return fmt.Sprintf("last heard from leader %s %d ms ago, more than %d ms", leader.ID,
			since.Milliseconds(), s.cfg.ReadyLeaderContact.Milliseconds())
	}
	var ri node.ReadIndex
	var err error
	if n.CaughtUp() {
		ri, err = n.ReadIndex(ctx)
	} else {
		ri, err = n.CatchUp(ctx)
	}
	if err != nil {
		return "not caught up with the leader: " + err.Error()
	}
	if applied := n.Stats().AppliedIndex; ri.Commit > applied && ri.Commit-applied > s.cfg.ReadyApplyLag {
		return fmt.Sprintf("applied index %d trails the leader's commit index %d by more than %d entries",
			applied, ri.Commit, s.cfg.ReadyApplyLag)
	}
	return ""
}

// caughtUp reports whether n's local state may be read as current: it
// caught up with its leader since it started (trying once now, within
// ReadyTimeout, if it has not) and hears from a leader within
// ReadyLeaderContact.
func (s *Service) caughtUp(ctx context.Context, n *node.Node) bool {
	if !n.CaughtUp() {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyTimeout)
		defer cancel()
		if _, err := n.CatchUp(ctx); err != nil {
			return false
		}
	}
	since, ok := n.LeaderContact()
	return ok && since <= s.cfg.ReadyLeaderContact
}

// Live is the check of /livez: this member's health while the process
// serves, for a liveness probe that fails only when restarting the process
// could help.
func (s *Service) Live() api.Health {
	if groups := s.host.Groups(); len(groups) > 0 {
		h := health(groups[0])
		h.LeaderContactMs = nil
		return h
	}
	return api.Health{Status: "ok", Node: s.host.ID(), RaftState: "starting"}
}

// health reads what the probes report of one group.
func health(n *node.Node) api.Health {
	st := n.Stats()
	h := api.Health{Status: "ok", Node: n.ID(), RaftState: strings.ToLower(st.State),
		CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex}
	if since, ok := n.LeaderContact(); ok {
		leader, _ := n.Leader()
		h.Leader = leader.ID
		contact := since.Milliseconds()
		h.LeaderContactMs = &contact
	}
	return h
}
