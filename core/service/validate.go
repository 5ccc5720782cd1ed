package service

import (
	"context"
	"fmt"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
)

// Validate answers whether token is the fencing token of one of
// resource's current holders (GET /lock/validate, Chubby's
// CheckSequencer). It reads status through the log, as Fence does, so the
// answer holds at a point between the call and the reply: a lease that
// ended before the call is never valid, one granted before it and live at
// that point always is.
//
// With stale it reads this member's applied state instead, without the
// log: it may then say valid for a token whose lease just ended or was
// superseded (the member has not applied that yet), but never for a token
// that was never granted on resource, since a member only applies what the
// log committed.
func (s *Service) Validate(ctx context.Context, resource string, token uint64, stale bool) (api.ValidateResponse, error) {
	if err := s.authorize(ctx, acl.RightRead, resource); err != nil {
		return api.ValidateResponse{}, err
	}
	if resource == "" {
		return api.ValidateResponse{}, fmt.Errorf("%w: query parameter resource is required", ErrInvalid)
	}
	if token == 0 {
		return api.ValidateResponse{}, fmt.Errorf("%w: query parameter token is required and must be a positive integer", ErrInvalid)
	}
	n, _, err := s.host.For(resource)
	if err != nil {
		return api.ValidateResponse{}, err
	}
	out := api.ValidateResponse{Resource: resource, Token: token, Stale: stale}
	var st lock.Status
	var logTime int64
	switch {
	case stale:
		current := s.caughtUp(ctx, n)
		out.CaughtUp = &current
		st, logTime = n.LocalStatus(resource), n.Stats().Lock.LogTime
	case s.staleValidate(n):
		st, logTime = n.LocalStatus(resource), n.Stats().Lock.LogTime
	default:
		ctx, cancel := s.deadline(ctx, 0)
		defer cancel()
		res, err := n.Status(ctx, resource)
		if err != nil {
			return api.ValidateResponse{}, fmt.Errorf("validate %q: %w", resource, err)
		}
		st, logTime = *res.Status, res.LogTime
	}
	out.LogTimeMs = ms(logTime)
	for _, h := range st.Holders {
		// A lease in its grace window keeps others out, but its TTL ran
		// out: its token is no longer valid (README "Grace window").
		out.Valid = out.Valid || h.Token == token && !h.InGrace()
		out.HolderTokenMax = max(out.HolderTokenMax, h.Token)
	}
	return out, nil
}
