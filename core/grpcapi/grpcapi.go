// Package grpcapi is lockstep's gRPC front end (proto/lockstep/v1) over
// core/service: the same operations as the HTTP/JSON front end, run by the
// same service (validation, shard routing, deadlines, the in-flight
// bound, error classes), plus what only a stream can do: an acquire that
// reports its queue position while it waits, and keep-alive of many
// leases over one stream. It converts protos to and from the core/api
// types and API errors to gRPC statuses; nothing more.
package grpcapi

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/service"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// Limits of one gRPC server.
const (
	// maxStreamsPerConn bounds concurrent calls on one connection.
	maxStreamsPerConn = 1000
	// maxMessageBytes bounds a received message, like the HTTP body limit.
	maxMessageBytes = 64 << 10
)

// Service implements lockstepv1.LockServer for one member.
type Service struct {
	lockstepv1.UnimplementedLockServer
	svc     *service.Service
	changes *Changes
	// health is the grpc.health.v1 service NewServer registers.
	health *healthService
}

var _ lockstepv1.LockServer = (*Service)(nil)

// New serves the operations of svc. changes must see every event the
// member's shards apply (lockd chains it into node.Config.Events); it
// drives the queue positions of AcquireStream.
func New(svc *service.Service, changes *Changes) *Service {
	if svc == nil || changes == nil {
		panic("grpcapi.New: nil service or changes")
	}
	ready := func() bool {
		_, ok := svc.Ready(context.Background())
		return ok
	}
	return &Service{svc: svc, changes: changes, health: newHealthService(ready, healthInterval)}
}

// NewServer returns a grpc.Server with lockstep's connection limits and
// svc registered, with grpc.health.v1 (every service SERVING while the
// member is ready, as /readyz says) and server reflection beside it.
// Extra options (credentials) come last.
func NewServer(svc *Service, opts ...grpc.ServerOption) *grpc.Server {
	base := []grpc.ServerOption{
		grpc.MaxConcurrentStreams(maxStreamsPerConn),
		grpc.MaxRecvMsgSize(maxMessageBytes),
	}
	g := grpc.NewServer(append(base, opts...)...)
	lockstepv1.RegisterLockServer(g, svc)
	healthpb.RegisterHealthServer(g, svc.health)
	reflection.Register(g)
	return g
}

// EndHealth turns the health service NOT_SERVING for good and ends its
// Watch streams: call it before Stop, so health-checking clients move
// away and their streams do not hold the graceful stop up.
func (s *Service) EndHealth() { s.health.shutdown() }

// admit runs fn holding one of the member's in-flight tokens.
func admit[T any](s *Service, fn func() (T, error)) (T, error) {
	done, err := s.svc.Admit()
	if err != nil {
		var zero T
		return zero, toStatus(err)
	}
	defer done()
	out, err := fn()
	if err != nil {
		var zero T
		return zero, toStatus(err)
	}
	return out, nil
}

// Acquire implements lockstepv1.LockServer.
func (s *Service) Acquire(ctx context.Context, in *lockstepv1.AcquireRequest) (*lockstepv1.AcquireResponse, error) {
	return admit(s, func() (*lockstepv1.AcquireResponse, error) {
		req, err := acquireRequest(in)
		if err != nil {
			return nil, err
		}
		out, err := s.svc.Acquire(ctx, req)
		if err != nil {
			return nil, err
		}
		return acquireResponse(out), nil
	})
}

// Release implements lockstepv1.LockServer.
func (s *Service) Release(ctx context.Context, in *lockstepv1.ReleaseRequest) (*lockstepv1.ReleaseResponse, error) {
	return admit(s, func() (*lockstepv1.ReleaseResponse, error) {
		out, err := s.svc.Release(ctx, api.ReleaseRequest{Resource: in.GetResource(), LeaseID: in.GetLeaseId()})
		if err != nil {
			return nil, err
		}
		return &lockstepv1.ReleaseResponse{Released: out.Released, LogTimeMs: out.LogTimeMs}, nil
	})
}

// Renew implements lockstepv1.LockServer.
func (s *Service) Renew(ctx context.Context, in *lockstepv1.RenewRequest) (*lockstepv1.RenewResponse, error) {
	return admit(s, func() (*lockstepv1.RenewResponse, error) {
		out, err := s.svc.Renew(ctx, api.RenewRequest{Resource: in.GetResource(), LeaseID: in.GetLeaseId(), TTLMs: in.GetTtlMs()})
		if err != nil {
			return nil, err
		}
		return &lockstepv1.RenewResponse{ExpiresInMs: out.ExpiresInMs, FencingToken: out.FencingToken, LogTimeMs: out.LogTimeMs}, nil
	})
}

// Status implements lockstepv1.LockServer.
func (s *Service) Status(ctx context.Context, in *lockstepv1.StatusRequest) (*lockstepv1.StatusResponse, error) {
	return admit(s, func() (*lockstepv1.StatusResponse, error) {
		out, err := s.svc.Status(ctx, in.GetResource(), in.GetStale())
		if err != nil {
			return nil, err
		}
		return statusResponse(out), nil
	})
}

// Validate implements lockstepv1.LockServer.
func (s *Service) Validate(ctx context.Context, in *lockstepv1.ValidateRequest) (*lockstepv1.ValidateResponse, error) {
	return admit(s, func() (*lockstepv1.ValidateResponse, error) {
		out, err := s.svc.Validate(ctx, in.GetResource(), in.GetToken(), in.GetStale())
		if err != nil {
			return nil, err
		}
		return validateResponse(out), nil
	})
}

// Cluster implements lockstepv1.LockServer.
func (s *Service) Cluster(ctx context.Context, in *lockstepv1.ClusterRequest) (*lockstepv1.ClusterResponse, error) {
	return admit(s, func() (*lockstepv1.ClusterResponse, error) {
		out, err := s.svc.Cluster(ctx, in.GetLocal())
		if err != nil {
			return nil, err
		}
		return clusterResponse(out), nil
	})
}

// Stop stops g gracefully, and at once when ctx ends first (blocked
// acquires and keep-alive streams would otherwise hold it up).
func Stop(ctx context.Context, g *grpc.Server) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.GracefulStop()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		g.Stop()
		<-done
		return fmt.Errorf("grpc graceful stop: %w", ctx.Err())
	}
}
