package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/shard"
)

func (s *Server) acquire(req *request) (any, error) {
	var in api.AcquireRequest
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	req.allowWait(time.Duration(max(in.Wait, 0)) * time.Millisecond)
	return s.Acquire(req.r.Context(), in)
}

func (s *Server) release(req *request) (any, error) {
	var in api.ReleaseRequest
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	return s.Release(req.r.Context(), in)
}

func (s *Server) renew(req *request) (any, error) {
	var in api.RenewRequest
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	return s.Renew(req.r.Context(), in)
}

func (s *Server) status(req *request) (any, error) {
	stale, err := queryBool(req.query, "stale")
	if err != nil {
		return nil, err
	}
	return s.Status(req.r.Context(), req.query.Get("resource"), stale)
}

// ready answers 200 only while every lock shard on this member follows a
// leader it heard from within ReadyLeaderContact, has caught up with that
// leader once since this process started (node.CatchUp: applied up to the
// leader's read index) and has applied to within ReadyApplyLag entries of
// the leader's commit index, asked now; otherwise 503 with the reason (of
// the first shard that fails). The shards are checked in parallel within
// ReadyTimeout. A member without a quorum has no leader for long, so it
// drops out; a restarted one is not ready while it holds only what it
// found on disk.
func (s *Server) ready(req *request) (any, error) {
	h, ok := s.Ready(req.r.Context())
	if !ok {
		return reply{code: api.CodeUnavailable, body: h}, nil
	}
	return h, nil
}

// Ready is the check of /readyz (the gRPC health service reports it too):
// true with the first shard's health while every shard is ready, else
// false with the health of the first that is not, its Error saying why.
func (s *Server) Ready(ctx context.Context) (api.Health, bool) {
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
func (s *Server) notReady(ctx context.Context, n *node.Node) string {
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
func (s *Server) caughtUp(ctx context.Context, n *node.Node) bool {
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

// live answers while the process serves HTTP: a liveness probe that fails
// only when restarting the process could help.
func (s *Server) live(*request) (any, error) {
	if groups := s.host.Groups(); len(groups) > 0 {
		h := health(groups[0])
		h.LeaderContactMs = nil
		return h, nil
	}
	return api.Health{Status: "ok", Node: s.host.ID(), RaftState: "starting"}, nil
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

// deadline bounds a request: the front-end timeout plus any queue wait.
func (s *Server) deadline(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.RequestTimeout+wait)
}

func ms(ns int64) int64 { return ns / int64(time.Millisecond) }

func expiresIn(expiresAt, logTime int64) int64 {
	if expiresAt <= logTime {
		return 0
	}
	return ms(expiresAt - logTime)
}
