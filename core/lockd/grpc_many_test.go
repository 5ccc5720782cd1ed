package lockd_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/grpcapi"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// manyView is what both APIs say of an acquire_many, in comparable form
// (lease ids differ per grant, so only whether one is there).
type manyView struct {
	granted   bool
	kind      string
	resources []string
	leases    int
	blocked   string
	position  int
}

func httpMany(t *testing.T, base string, in api.AcquireManyRequest) (manyView, api.Error, int) {
	t.Helper()
	var out api.AcquireManyResponse
	code, e := httpCall(t, http.MethodPost, base+api.PathAcquireMany, in, &out)
	v := manyView{granted: out.Granted, kind: string(out.Kind), blocked: out.Blocked, position: out.QueuePosition}
	for _, l := range out.Leases {
		v.resources = append(v.resources, l.Resource)
		if l.LeaseID != "" && l.FencingToken > 0 {
			v.leases++
		}
	}
	return v, e, code
}

func grpcMany(c lockstepv1.LockClient, in *lockstepv1.AcquireManyRequest) (manyView, *lockstepv1.AcquireManyResponse, error) {
	out, err := c.AcquireMany(context.Background(), in)
	if err != nil {
		return manyView{}, nil, err
	}
	kind := map[lockstepv1.ManyKind]string{lockstepv1.ManyKind_MANY_KIND_ATOMIC: "atomic", lockstepv1.ManyKind_MANY_KIND_CANONICAL: "canonical"}[out.GetKind()]
	v := manyView{granted: out.GetGranted(), kind: kind, blocked: out.GetBlocked(), position: int(out.GetQueuePosition())}
	for _, l := range out.GetLeases() {
		v.resources = append(v.resources, l.GetResource())
		if l.GetLeaseId() != "" && l.GetFencingToken() > 0 {
			v.leases++
		}
	}
	return v, out, nil
}

// Goal: AcquireMany answers over gRPC as POST /lock/acquire_many does:
// an atomic grant on one shard, the same refusal (blocked resource) when
// one is held, cross_shard for resources on several shards without
// canonical order, a canonical grant shard by shard, and the same error
// codes for bad requests. Method: three members with three shards; each
// step is sent both ways (on different members), on fresh resources
// where a grant would change the state, and the answers compared.
func TestGRPCAcquireManyMatchesHTTP(t *testing.T) {
	c := startGRPCCluster(t)
	web := func(i int) string { return "http://" + c.members[i].Addr() }
	tagged := func(tag string) []string { return []string{"{" + tag + "}a", "{" + tag + "}b"} }
	spread := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"}

	// Atomic grant on one shard (hash tag), each API on its own resources.
	hv, e, code := httpMany(t, web(0), api.AcquireManyRequest{Resources: tagged("h"), ClientID: "A", TTLMs: 60_000})
	gv, gout, err := grpcMany(c.clients[1], &lockstepv1.AcquireManyRequest{Resources: tagged("g"), ClientId: "A", TtlMs: 60_000})
	if code != 200 || err != nil || !hv.granted || hv.kind != "atomic" || hv.leases != 2 ||
		fmt.Sprint(gv.granted, gv.kind, gv.leases) != fmt.Sprint(hv.granted, hv.kind, hv.leases) {
		t.Fatalf("atomic grant: HTTP %d %+v %+v, gRPC %+v %v", code, hv, e, gv, err)
	}
	hs, _ := httpStatus(t, web(2), "{g}b")
	if len(hs) != 1 || hs[0].fingerprint != api.LeaseFingerprint(gout.GetLeases()[1].GetLeaseId()) {
		t.Fatalf("status of {g}b after the gRPC grant: %+v", hs)
	}

	// The held resources refuse a try-lock the same way, naming the blocker.
	hv, e, code = httpMany(t, web(2), api.AcquireManyRequest{Resources: tagged("g"), ClientID: "B", TTLMs: 1000})
	gv, _, err = grpcMany(c.clients[0], &lockstepv1.AcquireManyRequest{Resources: tagged("h"), ClientId: "B", TtlMs: 1000})
	if code != 200 || err != nil || hv.granted || hv.blocked != "{g}a" || gv.granted || gv.blocked != "{h}a" || gv.position != hv.position {
		t.Fatalf("try-lock of held resources: HTTP %d %+v %+v, gRPC %+v %v", code, hv, e, gv, err)
	}

	// Canonical order spans shards: granted shard by shard, leases in
	// request order; the second request (other API) then finds them held.
	gv, _, err = grpcMany(c.clients[2], &lockstepv1.AcquireManyRequest{Resources: spread, ClientId: "C", TtlMs: 60_000, Order: lockstepv1.Order_ORDER_CANONICAL})
	if err != nil || !gv.granted || gv.kind != "canonical" || fmt.Sprint(gv.resources) != fmt.Sprint(spread) || gv.leases != len(spread) {
		t.Fatalf("gRPC canonical: %+v %v", gv, err)
	}
	hv, e, code = httpMany(t, web(1), api.AcquireManyRequest{Resources: spread, ClientID: "D", TTLMs: 1000, Order: api.OrderCanonical})
	if code != 200 || hv.granted || hv.kind != "canonical" || hv.blocked == "" {
		t.Fatalf("HTTP canonical on held resources: %d %+v %+v", code, hv, e)
	}

	// Errors: the same API code both ways, and the documented gRPC code.
	cases := []struct {
		name     string
		in       api.AcquireManyRequest
		pb       *lockstepv1.AcquireManyRequest
		code     api.Code
		grpcCode codes.Code
	}{
		{"cross shard", api.AcquireManyRequest{Resources: spread, ClientID: "E", TTLMs: 1000},
			&lockstepv1.AcquireManyRequest{Resources: spread, ClientId: "E", TtlMs: 1000}, api.CodeCrossShard, codes.InvalidArgument},
		{"no resources", api.AcquireManyRequest{ClientID: "E", TTLMs: 1000},
			&lockstepv1.AcquireManyRequest{ClientId: "E", TtlMs: 1000}, api.CodeInvalidArgument, codes.InvalidArgument},
		{"resource twice", api.AcquireManyRequest{Resources: []string{"x", "x"}, ClientID: "E", TTLMs: 1000},
			&lockstepv1.AcquireManyRequest{Resources: []string{"x", "x"}, ClientId: "E", TtlMs: 1000}, api.CodeInvalidArgument, codes.InvalidArgument},
		{"ttl 0", api.AcquireManyRequest{Resources: tagged("z"), ClientID: "E"},
			&lockstepv1.AcquireManyRequest{Resources: tagged("z"), ClientId: "E"}, api.CodeInvalidArgument, codes.InvalidArgument},
	}
	for _, tc := range cases {
		_, he, code := httpMany(t, web(0), tc.in)
		_, _, err := grpcMany(c.clients[1], tc.pb)
		ge := grpcapi.APIError(err)
		if code != tc.code.HTTPStatus() || he.Code != tc.code || ge.Code != tc.code || grpcstatus.Code(err) != tc.grpcCode {
			t.Errorf("%s: HTTP %d %q, gRPC %v %q; want %q (%s)", tc.name, code, he.Code, grpcstatus.Code(err), ge.Code, tc.code, tc.grpcCode)
		}
	}
	if _, _, err := grpcMany(c.clients[1], &lockstepv1.AcquireManyRequest{Resources: tagged("z"), ClientId: "E", TtlMs: 1000, Order: 7}); grpcstatus.Code(err) != codes.InvalidArgument {
		t.Errorf("unknown order: %v, want INVALID_ARGUMENT", err)
	}
}
