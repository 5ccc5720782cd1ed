package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// The single-resource lock operations. Each validates its request, runs it
// on the resource's shard within the request deadline and answers in the
// core/api types; an error maps to its API error with Classify.

// Acquire takes (or queues for) the lock of one resource (POST
// /lock/acquire). A wait that ends ungranted is an answer (Granted false),
// not an error.
func (s *Service) Acquire(ctx context.Context, in api.AcquireRequest) (api.AcquireResponse, error) {
	if err := s.authorize(ctx, acl.RightAcquire, in.Resource); err != nil {
		return api.AcquireResponse{}, err
	}
	mode, err := lock.ParseMode(string(in.Mode))
	if err != nil {
		return api.AcquireResponse{}, err
	}
	policy, err := lock.ParsePolicy(string(in.Policy))
	if err != nil {
		return api.AcquireResponse{}, err
	}
	if in.TTLMs <= 0 {
		return api.AcquireResponse{}, fmt.Errorf("%w: ttl is required and must be > 0 ms", lock.ErrInvalid)
	}
	if in.WaitMs < 0 {
		return api.AcquireResponse{}, fmt.Errorf("%w: wait must be >= 0 ms", lock.ErrInvalid)
	}
	if in.Permits < 0 || in.Permits > lock.MaxPermits {
		return api.AcquireResponse{}, fmt.Errorf("%w: permits must be in 0..%d", lock.ErrBadPermits, lock.MaxPermits)
	}
	if err := checkGrace(in.GraceMs, in.TTLMs); err != nil {
		return api.AcquireResponse{}, err
	}
	cmd := lock.Command{
		Resource: in.Resource, ClientID: in.ClientID, RequestID: in.RequestID,
		Mode: mode, Policy: policy, TTLMs: in.TTLMs, WaitMs: in.WaitMs, Permits: uint32(in.Permits), GraceMs: in.GraceMs,
	}
	if err := s.admitAcquire(&cmd, in.Resource); err != nil {
		return api.AcquireResponse{}, err
	}
	ctx, cancel := s.deadline(ctx, time.Duration(in.WaitMs)*time.Millisecond)
	defer cancel()
	n, _, err := s.host.For(in.Resource)
	if err != nil {
		return api.AcquireResponse{}, err
	}
	res, err := n.Acquire(ctx, cmd)
	if errors.Is(err, node.ErrQuotaExceeded) {
		err = quotaExceeded(err, res.Blocked, lock.Namespace(in.Resource), in.ClientID, cmd.Quota)
	}
	if err != nil {
		return api.AcquireResponse{}, err
	}
	if !res.Granted {
		return api.AcquireResponse{QueuePosition: res.Position, LogTimeMs: ms(res.LogTime)}, nil
	}
	return api.AcquireResponse{
		Granted:      true,
		LeaseID:      res.Lease.ID.String(),
		FencingToken: res.Lease.Token,
		ExpiresInMs:  expiresIn(res.Lease.ExpiresAt, res.LogTime),
		Mode:         api.Mode(res.Lease.Mode.String()),
		LogTimeMs:    ms(res.LogTime),
	}, nil
}

// Release ends a lease (POST /lock/release).
func (s *Service) Release(ctx context.Context, in api.ReleaseRequest) (api.ReleaseResponse, error) {
	if err := s.authorize(ctx, acl.RightAcquire, in.Resource); err != nil {
		return api.ReleaseResponse{}, err
	}
	id, err := lock.ParseLeaseID(in.LeaseID)
	if err != nil {
		return api.ReleaseResponse{}, err
	}
	ctx, cancel := s.deadline(ctx, 0)
	defer cancel()
	n, _, err := s.host.For(in.Resource)
	if err != nil {
		return api.ReleaseResponse{}, err
	}
	res, err := n.Release(ctx, in.Resource, id)
	if err != nil {
		return api.ReleaseResponse{}, err
	}
	return api.ReleaseResponse{Released: true, LogTimeMs: ms(res.LogTime)}, nil
}

// Renew extends a lease to now+ttl (POST /lock/renew).
func (s *Service) Renew(ctx context.Context, in api.RenewRequest) (api.RenewResponse, error) {
	if err := s.authorize(ctx, acl.RightAcquire, in.Resource); err != nil {
		return api.RenewResponse{}, err
	}
	id, err := lock.ParseLeaseID(in.LeaseID)
	if err != nil {
		return api.RenewResponse{}, err
	}
	if in.TTLMs < 0 {
		return api.RenewResponse{}, fmt.Errorf("%w: ttl must be >= 0 ms", lock.ErrInvalid)
	}
	ctx, cancel := s.deadline(ctx, 0)
	defer cancel()
	n, _, err := s.host.For(in.Resource)
	if err != nil {
		return api.RenewResponse{}, err
	}
	res, err := n.Renew(ctx, in.Resource, id, in.TTLMs)
	if err != nil {
		return api.RenewResponse{}, err
	}
	return api.RenewResponse{
		ExpiresInMs:  expiresIn(res.Lease.ExpiresAt, res.LogTime),
		FencingToken: res.Lease.Token,
		LogTimeMs:    ms(res.LogTime),
	}, nil
}

// Status reads a resource's holders and queue (GET /lock/status): through
// the log, or with stale from this member's state.
func (s *Service) Status(ctx context.Context, resource string, stale bool) (api.StatusResponse, error) {
	if err := s.authorize(ctx, acl.RightRead, resource); err != nil {
		return api.StatusResponse{}, err
	}
	if resource == "" {
		return api.StatusResponse{}, fmt.Errorf("%w: query parameter resource is required", lock.ErrInvalid)
	}
	n, _, err := s.host.For(resource)
	if err != nil {
		return api.StatusResponse{}, err
	}
	var st lock.Status
	var logTime int64
	var caughtUp *bool
	if stale {
		// An explicit opt-in: this node's view, possibly behind the
		// leader, and flagged when it may be far behind (a restarted
		// member still holding only its snapshot).
		current := s.caughtUp(ctx, n)
		caughtUp = &current
		st = n.LocalStatus(resource)
		logTime = n.Stats().Lock.LogTime
	} else {
		ctx, cancel := s.deadline(ctx, 0)
		defer cancel()
		res, err := n.Status(ctx, resource)
		if err != nil {
			return api.StatusResponse{}, err
		}
		st, logTime = *res.Status, res.LogTime
	}
	out := api.StatusResponse{Resource: resource, Holders: []api.Holder{}, Queue: []api.Waiter{}, LogTimeMs: ms(logTime),
		CaughtUp: caughtUp, Permits: int64(st.Permits)}
	for _, h := range st.Holders {
		out.Holders = append(out.Holders, holderOf(h, logTime))
	}
	for _, w := range st.Queue {
		out.Queue = append(out.Queue, api.Waiter{ClientID: w.ClientID, Mode: api.Mode(w.Mode.String())})
	}
	return out, nil
}

// holderOf is how a status reply shows holder h at logTime.
func holderOf(h lock.Lease, logTime int64) api.Holder {
	// Never the id itself: it would let any reader release the lease.
	out := api.Holder{
		ClientID: h.ClientID, LeaseFingerprint: api.LeaseFingerprint(h.ID.String()), Mode: api.Mode(h.Mode.String()),
		FencingToken: h.Token, ExpiresInMs: expiresIn(h.ExpiresAt, logTime), State: api.HolderHeld, GraceMs: h.GraceMs,
	}
	if h.InGrace() {
		out.State, out.GraceRemainingMs = api.HolderGrace, expiresIn(h.GraceUntil, logTime)
	}
	return out
}

// ms converts a log time or duration in nanoseconds to the API's
// milliseconds.
func ms(ns int64) int64 { return ns / int64(time.Millisecond) }

// expiresIn is how long after logTime a lease expiring at expiresAt
// lives on, in ms (0 once it expired).
func expiresIn(expiresAt, logTime int64) int64 {
	if expiresAt <= logTime {
		return 0
	}
	return ms(expiresAt - logTime)
}
