package lockd_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/grpcapi"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// TestGraceWindow: goal — a lease acquired with a grace window keeps its
// resource from everyone else after it expires, over HTTP and gRPC alike:
// status shows it in grace, a try-lock is refused, its token is not valid,
// a renew revives it with the same token; left to expire, the queued
// waiter is granted only once the window is over, with a higher token. A
// grace above the TTL is refused with bad_grace. Method: three members
// (three shards), clients on different members, real time; ttl 600ms and
// grace 600ms (grace is at most the TTL).
func TestGraceWindow(t *testing.T) {
	c := startGRPCCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := func(i int) string { return "http://" + c.members[i].Addr() }

	var bad api.AcquireResponse
	if code, e := httpCall(t, http.MethodPost, url(0)+api.PathAcquire,
		api.AcquireRequest{Resource: "job", ClientID: "A", TTLMs: 300, GraceMs: 301}, &bad); code != 400 || e.Code != api.CodeBadGrace {
		t.Fatalf("HTTP acquire with grace above ttl: %d %+v, want 400 %s", code, e, api.CodeBadGrace)
	}
	_, err := c.clients[1].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "job", ClientId: "A", TtlMs: 300, GraceMs: -1})
	if grpcstatus.Code(err) != codes.InvalidArgument || grpcapi.APIError(err).Code != api.CodeBadGrace {
		t.Fatalf("gRPC acquire with negative grace: %v, want INVALID_ARGUMENT %s", err, api.CodeBadGrace)
	}

	held, err := c.clients[0].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "job", ClientId: "A", TtlMs: 600, GraceMs: 600})
	if err != nil || !held.GetGranted() {
		t.Fatalf("gRPC acquire with grace: %v %v", held, err)
	}
	token := held.GetFencingToken()
	// Past the TTL (the grant came before the reply), inside the window.
	time.Sleep(750 * time.Millisecond)

	st := status(t, url(1), "job")
	if len(st.Holders) != 1 || st.Holders[0].State != api.HolderGrace || st.Holders[0].FencingToken != token ||
		st.Holders[0].GraceMs != 600 || st.Holders[0].GraceRemainingMs <= 0 || st.Holders[0].ExpiresInMs != 0 {
		t.Fatalf("HTTP status in the window: %+v, want one holder in grace with #%d", st.Holders, token)
	}
	gst, err := c.clients[2].Status(ctx, &lockstepv1.StatusRequest{Resource: "job"})
	if err != nil || len(gst.GetHolders()) != 1 || gst.GetHolders()[0].GetState() != lockstepv1.HolderState_HOLDER_STATE_GRACE {
		t.Fatalf("gRPC status in the window: %v %v", gst, err)
	}
	var try api.AcquireResponse
	if code, e := httpCall(t, http.MethodPost, url(2)+api.PathAcquire,
		api.AcquireRequest{Resource: "job", ClientID: "B", TTLMs: 1000}, &try); code != 200 || try.Granted {
		t.Fatalf("try-lock in the window: %d %+v %+v, want refused", code, try, e)
	}
	var v api.ValidateResponse
	if code, e := httpCall(t, http.MethodGet, fmt.Sprintf("%s%s?resource=job&token=%d", url(1), api.PathValidate, token), nil, &v); code != 200 ||
		v.Valid || v.HolderTokenMax != token {
		t.Fatalf("validate in the window: %d %+v %+v, want not valid", code, v, e)
	}

	var renewed api.RenewResponse
	if code, e := httpCall(t, http.MethodPost, url(1)+api.PathRenew,
		api.RenewRequest{Resource: "job", LeaseID: held.GetLeaseId()}, &renewed); code != 200 || renewed.FencingToken != token {
		t.Fatalf("renew in the window: %d %+v %+v, want the lease revived with #%d", code, renewed, e, token)
	}
	revivedAt := time.Now()
	if st := status(t, url(0), "job"); len(st.Holders) != 1 || st.Holders[0].State != api.HolderHeld || st.Holders[0].FencingToken != token {
		t.Fatalf("status after the revive: %+v, want held with #%d", st.Holders, token)
	}

	// Nobody renews now: the lease expires 600ms after the revive and its
	// window ends 600ms later; only then is the waiter granted.
	var next api.AcquireResponse
	if code, e := httpCall(t, http.MethodPost, url(2)+api.PathAcquire,
		api.AcquireRequest{Resource: "job", ClientID: "B", TTLMs: 1000, WaitMs: 10_000}, &next); code != 200 || !next.Granted {
		t.Fatalf("queued acquire: %d %+v %+v, want granted", code, next, e)
	}
	if waited := time.Since(revivedAt); waited < 1100*time.Millisecond || next.FencingToken <= token {
		t.Fatalf("waiter granted #%d %v after the revive, want a token above %d after ttl+grace (1.2s)", next.FencingToken, waited, token)
	}
	var gone api.RenewResponse
	if code, e := httpCall(t, http.MethodPost, url(0)+api.PathRenew,
		api.RenewRequest{Resource: "job", LeaseID: held.GetLeaseId()}, &gone); code != 409 || e.Code != api.CodeNotHolder {
		t.Fatalf("renew after the window: %d %+v, want 409 not_holder", code, e)
	}
}
