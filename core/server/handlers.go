package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/shard"
)

func (s *Server) acquire(req *request) (any, error) {
	var in api.AcquireRequest
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	mode, err := lock.ParseMode(string(in.Mode))
	if err != nil {
		return nil, err
	}
	policy, err := lock.ParsePolicy(string(in.Policy))
	if err != nil {
		return nil, err
	}
	if in.TTL <= 0 {
		return nil, fmt.Errorf("%w: ttl is required and must be > 0 ms", lock.ErrInvalid)
	}
	if in.Wait < 0 {
		return nil, fmt.Errorf("%w: wait must be >= 0 ms", lock.ErrInvalid)
	}
	cmd := lock.Command{
		Resource: in.Resource, ClientID: in.ClientID, RequestID: in.RequestID,
		Mode: mode, Policy: policy, TTLMs: in.TTL, WaitMs: in.Wait,
	}
	wait := time.Duration(in.Wait) * time.Millisecond
	req.allowWait(wait)
	ctx, cancel := s.deadline(req.r.Context(), wait)
	defer cancel()
	n, _, err := s.host.For(in.Resource)
	if err != nil {
		return nil, err
	}
	res, err := n.Acquire(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if !res.Granted {
		return api.AcquireResponse{QueuePosition: res.Position, LogTime: ms(res.LogTime)}, nil
	}
	return api.AcquireResponse{
		Granted:      true,
		LeaseID:      res.Lease.ID.String(),
		FencingToken: res.Lease.Token,
		ExpiresIn:    expiresIn(res.Lease.ExpiresAt, res.LogTime),
		Mode:         api.Mode(res.Lease.Mode.String()),
		LogTime:      ms(res.LogTime),
	}, nil
}

func (s *Server) release(req *request) (any, error) {
	var in api.ReleaseRequest
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	id, err := lock.ParseLeaseID(in.LeaseID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.deadline(req.r.Context(), 0)
	defer cancel()
	n, _, err := s.host.For(in.Resource)
	if err != nil {
		return nil, err
	}
	res, err := n.Release(ctx, in.Resource, id)
	if err != nil {
		return nil, err
	}
	return api.ReleaseResponse{Released: true, LogTime: ms(res.LogTime)}, nil
}

func (s *Server) renew(req *request) (any, error) {
	var in api.RenewRequest
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	id, err := lock.ParseLeaseID(in.LeaseID)
	if err != nil {
		return nil, err
	}
	if in.TTL < 0 {
		return nil, fmt.Errorf("%w: ttl must be >= 0 ms", lock.ErrInvalid)
	}
	ctx, cancel := s.deadline(req.r.Context(), 0)
	defer cancel()
	n, _, err := s.host.For(in.Resource)
	if err != nil {
		return nil, err
	}
	res, err := n.Renew(ctx, in.Resource, id, in.TTL)
	if err != nil {
		return nil, err
	}
	return api.RenewResponse{
		ExpiresIn:    expiresIn(res.Lease.ExpiresAt, res.LogTime),
		FencingToken: res.Lease.Token,
		LogTime:      ms(res.LogTime),
	}, nil
}

func (s *Server) status(req *request) (any, error) {
	resource := req.query.Get("resource")
	if resource == "" {
		return nil, fmt.Errorf("%w: query parameter resource is required", lock.ErrInvalid)
	}
	stale, err := queryBool(req.query, "stale")
	if err != nil {
		return nil, err
	}
	n, _, err := s.host.For(resource)
	if err != nil {
		return nil, err
	}
	var st lock.Status
	var logTime int64
	if stale {
		// An explicit opt-in: this node's view, possibly behind the leader.
		st = n.LocalStatus(resource)
		logTime = n.Stats().Lock.LogTime
	} else {
		ctx, cancel := s.deadline(req.r.Context(), 0)
		defer cancel()
		res, err := n.Status(ctx, resource)
		if err != nil {
			return nil, err
		}
		st, logTime = *res.Status, res.LogTime
	}
	out := api.StatusResponse{Resource: resource, Holders: []api.Holder{}, Queue: []api.Waiter{}, LogTime: ms(logTime)}
	for _, h := range st.Holders {
		// Never the id itself: it would let any reader release the lease.
		out.Holders = append(out.Holders, api.Holder{
			ClientID: h.ClientID, LeaseFingerprint: api.LeaseFingerprint(h.ID.String()), Mode: api.Mode(h.Mode.String()),
			FencingToken: h.Token, ExpiresIn: expiresIn(h.ExpiresAt, logTime),
		})
	}
	for _, w := range st.Queue {
		out.Queue = append(out.Queue, api.Waiter{ClientID: w.ClientID, Mode: api.Mode(w.Mode.String())})
	}
	return out, nil
}

// ready answers 200 only while every lock shard on this member follows a
// leader it heard from within ReadyLeaderContact and has applied to within
// ReadyApplyLag entries of the commit index it knows; otherwise 503 with
// the reason (of the first shard that fails). A member without a quorum
// has no leader for long, so it drops out.
func (s *Server) ready(*request) (any, error) {
	groups := s.host.Groups()
	if len(groups) == 0 {
		h := api.Health{Node: s.host.ID(), Status: "unavailable", Error: "not ready: " + shard.ErrNotReady.Error(), Code: api.CodeUnavailable}
		return reply{code: api.CodeUnavailable, body: h}, nil
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
		return reply{code: api.CodeUnavailable, body: h}, nil
	}
	return first, nil
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
