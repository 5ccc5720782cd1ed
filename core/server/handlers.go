package server

import (
	"fmt"
	"strconv"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/service"
)

// The routes of the lock API and the probes: each decodes its request and
// hands it to the service's operation of the same name.

func (s *Server) acquire(req *request) (any, error) {
	var in api.AcquireRequest
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	req.allowWait(time.Duration(max(in.WaitMs, 0)) * time.Millisecond)
	return s.svc.Acquire(req.r.Context(), in)
}

func (s *Server) acquireMany(req *request) (any, error) {
	var in api.AcquireManyRequest
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	req.allowWait(time.Duration(max(in.WaitMs, 0)) * time.Millisecond)
	return s.svc.AcquireMany(req.r.Context(), in)
}

func (s *Server) release(req *request) (any, error) {
	var in api.ReleaseRequest
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	return s.svc.Release(req.r.Context(), in)
}

func (s *Server) renew(req *request) (any, error) {
	var in api.RenewRequest
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	return s.svc.Renew(req.r.Context(), in)
}

func (s *Server) status(req *request) (any, error) {
	stale, err := queryBool(req.query, "stale")
	if err != nil {
		return nil, err
	}
	return s.svc.Status(req.r.Context(), req.query.Get("resource"), stale)
}

func (s *Server) fence(req *request) (any, error) {
	return s.svc.Fence(req.r.Context(), req.query.Get("resource"))
}

// validate reads token strictly: a positive integer, nothing else.
func (s *Server) validate(req *request) (any, error) {
	stale, err := queryBool(req.query, "stale")
	if err != nil {
		return nil, err
	}
	var token uint64
	if raw := req.query.Get("token"); raw != "" {
		if token, err = strconv.ParseUint(raw, 10, 64); err != nil || token == 0 {
			return nil, fmt.Errorf("%w: query parameter token=%q: want a positive integer", service.ErrInvalid, raw)
		}
	}
	return s.svc.Validate(req.r.Context(), req.query.Get("resource"), token, stale)
}

func (s *Server) cluster(req *request) (any, error) {
	local, err := queryBool(req.query, "local")
	if err != nil {
		return nil, err
	}
	return s.svc.Cluster(req.r.Context(), local)
}

// ready answers the service's readiness: 200, or 503 with the reason.
func (s *Server) ready(req *request) (any, error) {
	h, ok := s.svc.Ready(req.r.Context())
	if !ok {
		return reply{code: api.CodeUnavailable, body: h}, nil
	}
	return h, nil
}

// live answers while the process serves HTTP.
func (s *Server) live(*request) (any, error) {
	return s.svc.Live(), nil
}
