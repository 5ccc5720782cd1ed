package grpcapi

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// healthInterval is how often a Watch stream reads readiness again; Check
// and List read it on every call.
const healthInterval = time.Second

// healthServices are the names the health service reports on: the server
// as a whole ("") and the lock API. Both follow the member's readiness.
var healthServices = []string{"", lockstepv1.Lock_ServiceDesc.ServiceName}

// healthService is grpc.health.v1 for one member: SERVING while ready
// (service.Service.Ready, the check of /readyz), NOT_SERVING otherwise.
// grpc-go's health.Server keeps the statuses and feeds Watch streams;
// this reads readiness when asked instead of waiting for someone to set it.
type healthService struct {
	*health.Server
	ready    func() bool
	interval time.Duration
	// ending is cancelled by shutdown: every status is NOT_SERVING from
	// then on and Watch streams end, so a graceful stop is not held up.
	ending context.Context
	end    context.CancelFunc
	once   sync.Once
}

var _ healthpb.HealthServer = (*healthService)(nil)

func newHealthService(ready func() bool, interval time.Duration) *healthService {
	ending, end := context.WithCancel(context.Background())
	h := &healthService{Server: health.NewServer(), ready: ready, interval: interval, ending: ending, end: end}
	h.refresh()
	return h
}

// refresh sets every service's status from readiness, unless shut down.
func (h *healthService) refresh() {
	if h.ending.Err() != nil {
		return
	}
	status := healthpb.HealthCheckResponse_NOT_SERVING
	if h.ready() {
		status = healthpb.HealthCheckResponse_SERVING
	}
	for _, name := range healthServices {
		h.SetServingStatus(name, status)
	}
}

// Check implements healthpb.HealthServer: the status as of this call.
func (h *healthService) Check(ctx context.Context, in *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.refresh()
	return h.Server.Check(ctx, in)
}

// List implements healthpb.HealthServer: every status as of this call.
func (h *healthService) List(ctx context.Context, in *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	h.refresh()
	return h.Server.List(ctx, in)
}

// Watch implements healthpb.HealthServer: it sends the status and every
// change, reading readiness every interval while the stream lasts, until
// the caller goes away or the service shuts down.
func (h *healthService) Watch(in *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	unhook := context.AfterFunc(h.ending, cancel)
	defer unhook()
	h.refresh()
	go func() {
		ticker := time.NewTicker(h.interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				h.refresh()
			}
		}
	}()
	return h.Server.Watch(in, &healthStream{Health_WatchServer: stream, ctx: ctx})
}

// shutdown reports NOT_SERVING for good (to Watch streams too) and then
// ends the Watch streams.
func (h *healthService) shutdown() {
	h.once.Do(func() {
		h.Server.Shutdown()
		h.end()
	})
}

// healthStream is a Watch stream whose context also ends on shutdown.
type healthStream struct {
	healthpb.Health_WatchServer
	ctx context.Context
}

func (s *healthStream) Context() context.Context { return s.ctx }
