package lockd_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lockd"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

func dialGRPC(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func grpcHealth(t *testing.T, conn *grpc.ClientConn, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatalf("health Check(%q): %v", service, err)
	}
	return resp.GetStatus()
}

// TestGRPCHealthAndReflection: goal — a member's gRPC listener serves
// grpc.health.v1, SERVING for "" and lockstep.v1.Lock while the member is
// ready and NOT_SERVING while it is not (the /readyz check), and server
// reflection listing the lock API and describing it; neither health nor
// reflection calls leave spans, as the HTTP probes leave none. Method: a
// traced three-member cluster (ready) and a member started alone (no
// quorum, never ready); a grpc health client and a reflection client
// against each; then the exporter's spans.
func TestGRPCHealthAndReflection(t *testing.T) {
	members, _, exp := startTraced(t)
	conn := dialGRPC(t, members[0].GRPCAddr())
	waitFor(t, func() bool {
		return grpcHealth(t, conn, "") == healthpb.HealthCheckResponse_SERVING &&
			grpcHealth(t, conn, lockstepv1.Lock_ServiceDesc.ServiceName) == healthpb.HealthCheckResponse_SERVING
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(req *reflectionpb.ServerReflectionRequest) *reflectionpb.ServerReflectionResponse {
		t.Helper()
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var services []string
	listed := ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
	for _, s := range listed.GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	for _, want := range []string{"lockstep.v1.Lock", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"} {
		if !slices.Contains(services, want) {
			t.Errorf("reflection lists %v, without %s", services, want)
		}
	}
	described := ask(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "lockstep.v1.Lock"}})
	files := described.GetFileDescriptorResponse().GetFileDescriptorProto()
	var methods []string
	for _, raw := range files {
		var fd descriptorpb.FileDescriptorProto
		if err := proto.Unmarshal(raw, &fd); err != nil {
			t.Fatal(err)
		}
		for _, svc := range fd.GetService() {
			for _, m := range svc.GetMethod() {
				methods = append(methods, svc.GetName()+"/"+m.GetName())
			}
		}
	}
	if !slices.Contains(methods, "Lock/Acquire") || !slices.Contains(methods, "Lock/Watch") {
		t.Errorf("reflection describes methods %v, want the Lock service's", methods)
	}
	_ = stream.CloseSend()

	// A lock API call does leave a span: the exporter sees the calls.
	if _, err := lockstepv1.NewLockClient(conn).Status(ctx, &lockstepv1.StatusRequest{Resource: "r", Stale: true}); err != nil {
		t.Fatalf("Status: %v", err)
	}
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
	}
	if !slices.Contains(names, "lockstep status") {
		t.Fatalf("spans %v lack the Status call's", names)
	}
	for _, n := range names {
		if strings.Contains(n, "check") || strings.Contains(n, "reflection") {
			t.Errorf("span %q from a health or reflection call", n)
		}
	}

	alone, _ := startShardedWith(t, 1, 1, func(o *lockd.Options) { o.GRPCAddr, o.SpreadInterval = "127.0.0.1:0", -1 })
	lone := dialGRPC(t, alone[0].GRPCAddr())
	for _, service := range []string{"", lockstepv1.Lock_ServiceDesc.ServiceName} {
		if got := grpcHealth(t, lone, service); got != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("member without a quorum: %q is %v, want NOT_SERVING", service, got)
		}
	}
	resp, err := http.Get(alone[0].URL() + api.PathReady)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("member without a quorum: /readyz %d, want 503", resp.StatusCode)
	}
}
