package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
)

func (s *Server) acquire(r *http.Request) (any, error) {
	var req api.AcquireRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	mode, err := lock.ParseMode(string(req.Mode))
	if err != nil {
		return nil, err
	}
	policy, err := lock.ParsePolicy(string(req.Policy))
	if err != nil {
		return nil, err
	}
	if req.TTL <= 0 {
		return nil, fmt.Errorf("%w: ttl is required and must be > 0 ms", lock.ErrInvalid)
	}
	if req.Wait < 0 {
		return nil, fmt.Errorf("%w: wait must be >= 0 ms", lock.ErrInvalid)
	}
	cmd := lock.Command{
		Resource: req.Resource, ClientID: req.ClientID, RequestID: req.RequestID,
		Mode: mode, Policy: policy, TTLMs: req.TTL, WaitMs: req.Wait,
	}
	ctx, cancel := s.deadline(r.Context(), time.Duration(req.Wait)*time.Millisecond)
	defer cancel()
	res, err := s.node.Acquire(ctx, cmd)
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

func (s *Server) release(r *http.Request) (any, error) {
	var req api.ReleaseRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	id, err := lock.ParseLeaseID(req.LeaseID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.deadline(r.Context(), 0)
	defer cancel()
	res, err := s.node.Release(ctx, req.Resource, id)
	if err != nil {
		return nil, err
	}
	return api.ReleaseResponse{Released: true, LogTime: ms(res.LogTime)}, nil
}

func (s *Server) renew(r *http.Request) (any, error) {
	var req api.RenewRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	id, err := lock.ParseLeaseID(req.LeaseID)
	if err != nil {
		return nil, err
	}
	if req.TTL < 0 {
		return nil, fmt.Errorf("%w: ttl must be >= 0 ms", lock.ErrInvalid)
	}
	ctx, cancel := s.deadline(r.Context(), 0)
	defer cancel()
	res, err := s.node.Renew(ctx, req.Resource, id, req.TTL)
	if err != nil {
		return nil, err
	}
	return api.RenewResponse{
		ExpiresIn:    expiresIn(res.Lease.ExpiresAt, res.LogTime),
		FencingToken: res.Lease.Token,
		LogTime:      ms(res.LogTime),
	}, nil
}

func (s *Server) status(r *http.Request) (any, error) {
	q := r.URL.Query()
	resource := q.Get("resource")
	if resource == "" {
		return nil, fmt.Errorf("%w: query parameter resource is required", lock.ErrInvalid)
	}
	var st lock.Status
	var logTime int64
	if stale := q.Get("stale"); stale == "true" || stale == "1" {
		// An explicit opt-in: this node's view, possibly behind the leader.
		st = s.node.LocalStatus(resource)
		logTime = s.node.Stats().Lock.LogTime
	} else {
		ctx, cancel := s.deadline(r.Context(), 0)
		defer cancel()
		res, err := s.node.Status(ctx, resource)
		if err != nil {
			return nil, err
		}
		st, logTime = *res.Status, res.LogTime
	}
	out := api.StatusResponse{Resource: resource, Holders: []api.Holder{}, Queue: []api.Waiter{}, LogTime: ms(logTime)}
	for _, h := range st.Holders {
		out.Holders = append(out.Holders, api.Holder{
			ClientID: h.ClientID, LeaseID: h.ID.String(), Mode: api.Mode(h.Mode.String()),
			FencingToken: h.Token, ExpiresIn: expiresIn(h.ExpiresAt, logTime),
		})
	}
	for _, w := range st.Queue {
		out.Queue = append(out.Queue, api.Waiter{ClientID: w.ClientID, Mode: api.Mode(w.Mode.String())})
	}
	return out, nil
}

func (s *Server) cluster(*http.Request) (any, error) {
	leader, _ := s.node.Leader()
	out := api.ClusterResponse{Leader: leader.ID}
	self := s.node.Stats().State
	for _, p := range s.node.Peers() {
		state := "follower"
		switch {
		case p.ID == s.node.ID():
			state = self
		case p.ID == leader.ID:
			state = "Leader"
		case leader.ID == "":
			state = "unknown"
		}
		out.Nodes = append(out.Nodes, api.Node{ID: p.ID, RaftAddr: p.RaftAddr, HTTPAddr: p.HTTPAddr, State: strings.ToLower(state)})
	}
	return out, nil
}

func (s *Server) health(*http.Request) (any, error) {
	st := s.node.Stats()
	leader, ok := s.node.Leader()
	return map[string]any{"status": "ok", "node": s.node.ID(), "raft_state": strings.ToLower(st.State),
		"has_leader": ok, "leader": leader.ID}, nil
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
