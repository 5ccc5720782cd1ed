package grpcapi

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Goal: the health service follows readiness — Check and List read it
// when asked, a Watch stream hears of each change, and shutdown leaves
// every service NOT_SERVING for good and ends the Watch streams. Method:
// serve the service alone on loopback with a readiness flag the test
// flips; Watch changes are awaited with a generous deadline (they come
// from a 10ms ticker; nothing here measures time).
func TestHealthFollowsReadiness(t *testing.T) {
	var ready atomic.Bool
	h := newHealthService(ready.Load, 10*time.Millisecond)
	g := grpc.NewServer()
	healthpb.RegisterHealthServer(g, h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	client := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	check := func(service string, want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil || resp.GetStatus() != want {
			t.Fatalf("Check(%q) = %v, %v; want %v", service, resp.GetStatus(), err, want)
		}
	}
	for _, name := range healthServices {
		check(name, healthpb.HealthCheckResponse_NOT_SERVING)
	}
	ready.Store(true)
	for _, name := range healthServices {
		check(name, healthpb.HealthCheckResponse_SERVING)
	}
	list, err := client.List(ctx, &healthpb.HealthListRequest{})
	if err != nil || len(list.GetStatuses()) != len(healthServices) {
		t.Fatalf("List = %v, %v; want %d services", list.GetStatuses(), err, len(healthServices))
	}
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "no.such.Service"}); status.Code(err) != codes.NotFound {
		t.Fatalf("Check of an unknown service = %v, want NotFound", err)
	}

	watch, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: "lockstep.v1.Lock"})
	if err != nil {
		t.Fatal(err)
	}
	next := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		resp, err := watch.Recv()
		if err != nil || resp.GetStatus() != want {
			t.Fatalf("Watch sent %v, %v; want %v", resp.GetStatus(), err, want)
		}
	}
	next(healthpb.HealthCheckResponse_SERVING)
	ready.Store(false)
	next(healthpb.HealthCheckResponse_NOT_SERVING)
	ready.Store(true)
	next(healthpb.HealthCheckResponse_SERVING)

	h.shutdown()
	for {
		resp, err := watch.Recv()
		if err != nil {
			if status.Code(err) != codes.Canceled {
				t.Fatalf("Watch after shutdown ended with %v, want the stream ended (Canceled)", err)
			}
			break
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Fatalf("Watch after shutdown sent %v", resp.GetStatus())
		}
	}
	for _, name := range healthServices {
		check(name, healthpb.HealthCheckResponse_NOT_SERVING)
	}
}
