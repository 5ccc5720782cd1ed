package service

import (
	"context"
	"fmt"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/api"
)

// Fence reads, through the log as Status does, the highest fencing token
// among resource's current holders (GET /lock/fence): the newest token a
// protected resource should be accepting right now, 0 when nobody holds
// it. It reads what the state machine's status holds, so it is not the
// highest token ever granted on the resource: once the last holder is
// gone the answer is 0 again (api.FenceResponse).
func (s *Service) Fence(ctx context.Context, resource string) (api.FenceResponse, error) {
	if err := s.authorize(ctx, acl.RightRead, resource); err != nil {
		return api.FenceResponse{}, err
	}
	if resource == "" {
		return api.FenceResponse{}, fmt.Errorf("%w: query parameter resource is required", ErrInvalid)
	}
	n, _, err := s.host.For(resource)
	if err != nil {
		return api.FenceResponse{}, err
	}
	ctx, cancel := s.deadline(ctx, 0)
	defer cancel()
	res, err := n.Status(ctx, resource)
	if err != nil {
		return api.FenceResponse{}, fmt.Errorf("fence %q: %w", resource, err)
	}
	out := api.FenceResponse{Resource: resource, LogTimeMs: ms(res.LogTime)}
	for _, h := range res.Status.Holders {
		out.HolderTokenMax = max(out.HolderTokenMax, h.Token)
	}
	return out, nil
}
