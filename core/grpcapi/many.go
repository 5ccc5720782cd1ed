package grpcapi

import (
	"context"
	"fmt"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/service"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// AcquireMany implements lockstepv1.LockServer with the service's operation
// (service.AcquireMany): atomic on one shard, canonical or
// cross_shard on several.
func (s *Service) AcquireMany(ctx context.Context, in *lockstepv1.AcquireManyRequest) (*lockstepv1.AcquireManyResponse, error) {
	return admit(s, func() (*lockstepv1.AcquireManyResponse, error) {
		req, err := acquireManyRequest(in)
		if err != nil {
			return nil, err
		}
		out, err := s.svc.AcquireMany(ctx, req)
		if err != nil {
			return nil, err
		}
		return acquireManyResponse(out), nil
	})
}

func acquireManyRequest(in *lockstepv1.AcquireManyRequest) (api.AcquireManyRequest, error) {
	one, err := acquireRequest(&lockstepv1.AcquireRequest{Mode: in.GetMode(), Policy: in.GetPolicy()})
	if err != nil {
		return api.AcquireManyRequest{}, err
	}
	var order api.Order
	switch o := in.GetOrder(); o {
	case lockstepv1.Order_ORDER_UNSPECIFIED:
	case lockstepv1.Order_ORDER_CANONICAL:
		order = api.OrderCanonical
	default:
		return api.AcquireManyRequest{}, fmt.Errorf("%w: unknown order %d", service.ErrInvalid, o)
	}
	return api.AcquireManyRequest{
		Resources: in.GetResources(), ClientID: in.GetClientId(), TTLMs: in.GetTtlMs(), Mode: one.Mode,
		WaitMs: in.GetWaitMs(), RequestID: in.GetRequestId(), Policy: one.Policy, Order: order, GraceMs: in.GetGraceMs(),
	}, nil
}

func acquireManyResponse(out api.AcquireManyResponse) *lockstepv1.AcquireManyResponse {
	r := &lockstepv1.AcquireManyResponse{Granted: out.Granted, Blocked: out.Blocked,
		QueuePosition: int32(out.QueuePosition), LogTimeMs: out.LogTimeMs, Leases: make([]*lockstepv1.ManyLease, 0, len(out.Leases))}
	switch out.Kind {
	case api.KindAtomic:
		r.Kind = lockstepv1.ManyKind_MANY_KIND_ATOMIC
	case api.KindCanonical:
		r.Kind = lockstepv1.ManyKind_MANY_KIND_CANONICAL
	}
	for _, l := range out.Leases {
		r.Leases = append(r.Leases, &lockstepv1.ManyLease{Resource: l.Resource, LeaseId: l.LeaseID,
			FencingToken: l.FencingToken, ExpiresInMs: l.ExpiresInMs})
	}
	return r
}
