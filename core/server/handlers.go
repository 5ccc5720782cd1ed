package server

import (
	"context"
	"fmt"
	"strings"
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
// leader it heard from within ReadyLeaderContact and has applied to within
// ReadyApplyLag entries of the commit index it knows; otherwise 503 with
// the reason (of the first shard that fails). A member without a quorum
// has no leader for long, so it drops out.
func (s *Server) ready(*request) (any, error) {
	h, ok := s.Ready()
	if !ok {
		return reply{code: api.CodeUnavailable, body: h}, nil
	}
	return h, nil
}

// Ready is the check of /readyz (the gRPC health service reports it too):
// true with the first shard's health while every shard is ready, else
// false with the health of the first that is not, its Error saying why.
func (s *Server) Ready() (api.Health, bool) {
	groups := s.host.Groups()
	if len(groups) == 0 {
		return api.Health{Node: s.host.ID(), Status: "unavailable", Error: "not ready: " + shard.ErrNotReady.Error(), Code: api.CodeUnavailable}, false
	}
	var first api.Health
	for i, g := range groups {
		h := health(g)
		if i == 0 {
			first = h
		}
		var reason string
		switch {
		case h.LeaderContactMs == nil:
			reason = "no leader known"
		case time.Duration(*h.LeaderContactMs)*time.Millisecond > s.cfg.ReadyLeaderContact:
			reason = fmt.Sprintf("last heard from leader %s %d ms ago, more than %d ms", h.Leader,
				*h.LeaderContactMs, s.cfg.ReadyLeaderContact.Milliseconds())
		case h.CommitIndex > h.AppliedIndex && h.CommitIndex-h.AppliedIndex > s.cfg.ReadyApplyLag:
			reason = fmt.Sprintf("applied index %d trails commit index %d by more than %d entries",
				h.AppliedIndex, h.CommitIndex, s.cfg.ReadyApplyLag)
		default:
			continue
		}
		if len(groups) > 1 {
			reason = fmt.Sprintf("shard %d: %s", i+1, reason)
		}
		h.Status, h.Error, h.Code = "unavailable", "not ready: "+reason, api.CodeUnavailable
		return h, false
	}
	return first, true
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
