package lockd_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/grpcapi"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/node"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// grpcCluster is three members with three lock shards, each serving HTTP
// and gRPC, and a stock grpc-go client per member (plaintext).
type grpcCluster struct {
	members []*lockd.Member
	clients []lockstepv1.LockClient
}

func startGRPCCluster(t *testing.T) *grpcCluster {
	t.Helper()
	return startGRPCClusterTuned(t, nil)
}

// startGRPCClusterTuned is startGRPCCluster with tune applied to every
// shard's node config.
func startGRPCClusterTuned(t *testing.T, tune func(*node.Config)) *grpcCluster {
	t.Helper()
	var peers []node.Peer
	for i := range 3 {
		peers = append(peers, node.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: freeAddr(t)})
	}
	base := t.TempDir()
	c := &grpcCluster{}
	for i := range 3 {
		m, err := lockd.Start(lockd.Options{
			ID: peers[i].ID, RaftAddr: peers[i].RaftAddr, HTTPAddr: freeAddr(t), GRPCAddr: freeAddr(t),
			DataDir: filepath.Join(base, peers[i].ID), Peers: peers, Bootstrap: true, Shards: 3,
			Lock: lock.DefaultConfig(), Logger: slog.New(slog.DiscardHandler),
			// Leaders stay where elected: a leadership transfer mid-test
			// would answer outcome_unknown, which no check here is about.
			SpreadInterval: -1, Tune: tune,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stopMember(t, m) })
		conn, err := grpc.NewClient(m.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		c.members = append(c.members, m)
		c.clients = append(c.clients, lockstepv1.NewLockClient(conn))
	}
	waitFor(t, func() bool {
		for s := 1; s <= 3; s++ {
			for _, m := range c.members {
				if _, ok := m.Shard(s).Leader(); !ok {
					return false
				}
			}
		}
		return true
	})
	return c
}

// httpCall sends one HTTP request and returns the status and the body,
// decoded into out on 200 and into the returned api.Error otherwise.
func httpCall(t *testing.T, method, u string, body, out any) (int, api.Error) {
	t.Helper()
	code, e, _ := call(t, method, u, "", body, out)
	return code, e
}

// holderView is what both APIs say of a holder, in comparable form.
type holderView struct {
	client, fingerprint, mode string
	token                     uint64
}

func httpStatus(t *testing.T, base, resource string) ([]holderView, []string) {
	t.Helper()
	var st api.StatusResponse
	if code, e := httpCall(t, http.MethodGet, base+api.PathStatus+"?resource="+url.QueryEscape(resource), nil, &st); code != 200 {
		t.Fatalf("HTTP status %s: %d %+v", resource, code, e)
	}
	var hs []holderView
	for _, h := range st.Holders {
		hs = append(hs, holderView{h.ClientID, h.LeaseFingerprint, string(h.Mode), h.FencingToken})
	}
	var q []string
	for _, w := range st.Queue {
		q = append(q, w.ClientID)
	}
	return hs, q
}

func grpcStatus(t *testing.T, c lockstepv1.LockClient, resource string) ([]holderView, []string) {
	t.Helper()
	st, err := c.Status(context.Background(), &lockstepv1.StatusRequest{Resource: resource})
	if err != nil {
		t.Fatalf("gRPC status %s: %v", resource, err)
	}
	var hs []holderView
	for _, h := range st.GetHolders() {
		mode := map[lockstepv1.Mode]string{lockstepv1.Mode_MODE_EXCLUSIVE: "exclusive", lockstepv1.Mode_MODE_SHARED: "shared"}[h.GetMode()]
		hs = append(hs, holderView{h.GetClientId(), h.GetLeaseFingerprint(), mode, h.GetFencingToken()})
	}
	var q []string
	for _, w := range st.GetQueue() {
		q = append(q, w.GetClientId())
	}
	return hs, q
}

// Goal: one cluster answers HTTP and gRPC alike: the same grants, refusals,
// holders and error codes, whichever API made the change. Method: three
// members with three shards; alternate the APIs (and members) for each step,
// read every result back through both, and send each bad request both ways
// comparing the API code (gRPC: ErrorInfo reason) and the gRPC status code.
func TestGRPCAndHTTPSeeTheSameResults(t *testing.T) {
	c := startGRPCCluster(t)
	ctx := context.Background()
	web := func(i int) string { return "http://" + c.members[i].Addr() }

	// A grant made over gRPC is the holder both APIs report.
	got, err := c.clients[1].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "r1", ClientId: "A", TtlMs: 60_000})
	if err != nil || !got.GetGranted() || got.GetMode() != lockstepv1.Mode_MODE_EXCLUSIVE {
		t.Fatalf("gRPC acquire: %v %v", got, err)
	}
	want := []holderView{{"A", api.LeaseFingerprint(got.GetLeaseId()), "exclusive", got.GetFencingToken()}}
	for i := range 3 {
		hh, hq := httpStatus(t, web(i), "r1")
		gh, gq := grpcStatus(t, c.clients[i], "r1")
		if fmt.Sprint(hh, hq) != fmt.Sprint(want, []string(nil)) || fmt.Sprint(gh, gq) != fmt.Sprint(hh, hq) {
			t.Fatalf("member %d: HTTP status %v %v, gRPC %v %v, want %v", i, hh, hq, gh, gq, want)
		}
	}

	// Both refuse a try-lock on the held lock the same way.
	var httpTry api.AcquireResponse
	if code, e := httpCall(t, http.MethodPost, web(2)+api.PathAcquire, api.AcquireRequest{Resource: "r1", ClientID: "B", TTLMs: 1000}, &httpTry); code != 200 || httpTry.Granted {
		t.Fatalf("HTTP try-lock: %d %+v %+v", code, httpTry, e)
	}
	grpcTry, err := c.clients[0].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "r1", ClientId: "B", TtlMs: 1000})
	if err != nil || grpcTry.GetGranted() || int(grpcTry.GetQueuePosition()) != httpTry.QueuePosition {
		t.Fatalf("gRPC try-lock: %v %v, HTTP said %+v", grpcTry, err, httpTry)
	}

	// A renew over HTTP and one over gRPC keep the lease and its token.
	var renewed api.RenewResponse
	if code, e := httpCall(t, http.MethodPost, web(0)+api.PathRenew, api.RenewRequest{Resource: "r1", LeaseID: got.GetLeaseId(), TTLMs: 30_000}, &renewed); code != 200 {
		t.Fatalf("HTTP renew: %d %+v", code, e)
	}
	grenew, err := c.clients[2].Renew(ctx, &lockstepv1.RenewRequest{Resource: "r1", LeaseId: got.GetLeaseId(), TtlMs: 30_000})
	if err != nil || grenew.GetFencingToken() != renewed.FencingToken || renewed.FencingToken != got.GetFencingToken() {
		t.Fatalf("gRPC renew %v %v, HTTP %+v, grant token %d", grenew, err, renewed, got.GetFencingToken())
	}

	// Set up a request id that was granted and released (lease_ended on retry).
	var first api.AcquireResponse
	if code, e := httpCall(t, http.MethodPost, web(1)+api.PathAcquire,
		api.AcquireRequest{Resource: "r2", ClientID: "C", TTLMs: 5000, RequestID: "q1"}, &first); code != 200 || !first.Granted {
		t.Fatalf("HTTP acquire r2: %d %+v", code, e)
	}
	if _, err := c.clients[0].Release(ctx, &lockstepv1.ReleaseRequest{Resource: "r2", LeaseId: first.LeaseID}); err != nil {
		t.Fatalf("gRPC release r2: %v", err)
	}

	noLease := "00000000000000000000000000000001"
	// The held lease's id in upper case: the same hex number, another
	// byte string, so refused rather than taken for the lease.
	upper := strings.ToUpper(got.GetLeaseId())
	if upper == got.GetLeaseId() {
		t.Fatalf("lease id %s has no hex letter to upper-case (1 in 3 million): run again", upper)
	}
	cases := []struct {
		name     string
		path     string
		body     any
		rpc      func() error
		code     api.Code
		grpcCode codes.Code
	}{
		{"acquire ttl 0", api.PathAcquire, api.AcquireRequest{Resource: "r3", ClientID: "D"}, func() error {
			_, err := c.clients[0].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "r3", ClientId: "D"})
			return err
		}, api.CodeInvalidArgument, codes.InvalidArgument},
		{"acquire no resource", api.PathAcquire, api.AcquireRequest{ClientID: "D", TTLMs: 1000}, func() error {
			_, err := c.clients[1].Acquire(ctx, &lockstepv1.AcquireRequest{ClientId: "D", TtlMs: 1000})
			return err
		}, api.CodeInvalidArgument, codes.InvalidArgument},
		{"release malformed lease id", api.PathRelease, api.ReleaseRequest{Resource: "r1", LeaseID: "zz"}, func() error {
			_, err := c.clients[2].Release(ctx, &lockstepv1.ReleaseRequest{Resource: "r1", LeaseId: "zz"})
			return err
		}, api.CodeInvalidArgument, codes.InvalidArgument},
		{"release upper-case lease id", api.PathRelease, api.ReleaseRequest{Resource: "r1", LeaseID: upper}, func() error {
			_, err := c.clients[1].Release(ctx, &lockstepv1.ReleaseRequest{Resource: "r1", LeaseId: upper})
			return err
		}, api.CodeInvalidArgument, codes.InvalidArgument},
		{"renew upper-case lease id", api.PathRenew, api.RenewRequest{Resource: "r1", LeaseID: upper}, func() error {
			_, err := c.clients[2].Renew(ctx, &lockstepv1.RenewRequest{Resource: "r1", LeaseId: upper})
			return err
		}, api.CodeInvalidArgument, codes.InvalidArgument},
		{"release not held", api.PathRelease, api.ReleaseRequest{Resource: "r1", LeaseID: noLease}, func() error {
			_, err := c.clients[0].Release(ctx, &lockstepv1.ReleaseRequest{Resource: "r1", LeaseId: noLease})
			return err
		}, api.CodeNotHolder, codes.FailedPrecondition},
		{"renew not held", api.PathRenew, api.RenewRequest{Resource: "r2", LeaseID: first.LeaseID}, func() error {
			_, err := c.clients[1].Renew(ctx, &lockstepv1.RenewRequest{Resource: "r2", LeaseId: first.LeaseID})
			return err
		}, api.CodeNotHolder, codes.FailedPrecondition},
		{"renew negative ttl", api.PathRenew, api.RenewRequest{Resource: "r1", LeaseID: got.GetLeaseId(), TTLMs: -1}, func() error {
			_, err := c.clients[2].Renew(ctx, &lockstepv1.RenewRequest{Resource: "r1", LeaseId: got.GetLeaseId(), TtlMs: -1})
			return err
		}, api.CodeInvalidArgument, codes.InvalidArgument},
		{"request id reused", api.PathAcquire, api.AcquireRequest{Resource: "r2", ClientID: "C", TTLMs: 7000, RequestID: "q1"}, func() error {
			_, err := c.clients[0].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "r2", ClientId: "C", TtlMs: 7000, RequestId: "q1"})
			return err
		}, api.CodeRequestIDReused, codes.AlreadyExists},
		{"lease ended", api.PathAcquire, api.AcquireRequest{Resource: "r2", ClientID: "C", TTLMs: 5000, RequestID: "q1"}, func() error {
			_, err := c.clients[2].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "r2", ClientId: "C", TtlMs: 5000, RequestId: "q1"})
			return err
		}, api.CodeLeaseEnded, codes.FailedPrecondition},
		{"status no resource", "", nil, func() error {
			_, err := c.clients[1].Status(ctx, &lockstepv1.StatusRequest{})
			return err
		}, api.CodeInvalidArgument, codes.InvalidArgument},
	}
	for _, tc := range cases {
		var code int
		var he api.Error
		if tc.body == nil {
			code, he = httpCall(t, http.MethodGet, web(0)+api.PathStatus+"?resource=", nil, nil)
		} else {
			code, he = httpCall(t, http.MethodPost, web(0)+tc.path, tc.body, &struct{}{})
		}
		err := tc.rpc()
		ge := grpcapi.APIError(err)
		if code != tc.code.HTTPStatus() || he.Code != tc.code || ge.Code != tc.code || grpcstatus.Code(err) != tc.grpcCode {
			t.Errorf("%s: HTTP %d %q, gRPC %v %q; want %q (%s)", tc.name, code, he.Code, grpcstatus.Code(err), ge.Code, tc.code, tc.grpcCode)
		}
		if he.LeaseID != ge.LeaseID || he.FencingToken != ge.FencingToken {
			t.Errorf("%s: HTTP names lease %q token %d, gRPC %q %d", tc.name, he.LeaseID, he.FencingToken, ge.LeaseID, ge.FencingToken)
		}
		if tc.code == api.CodeLeaseEnded && ge.LeaseID != first.LeaseID {
			t.Errorf("lease ended names %q, want %q", ge.LeaseID, first.LeaseID)
		}
	}

	// A release over gRPC frees the lock for both; a second one is not_holder.
	if _, err := c.clients[1].Release(ctx, &lockstepv1.ReleaseRequest{Resource: "r1", LeaseId: got.GetLeaseId()}); err != nil {
		t.Fatalf("gRPC release: %v", err)
	}
	if code, e := httpCall(t, http.MethodPost, web(2)+api.PathRelease, api.ReleaseRequest{Resource: "r1", LeaseID: got.GetLeaseId()}, &struct{}{}); code != 409 || e.Code != api.CodeNotHolder {
		t.Fatalf("HTTP release after gRPC release: %d %+v", code, e)
	}
	if hh, _ := httpStatus(t, web(0), "r1"); len(hh) != 0 {
		t.Fatalf("holders after release: %v", hh)
	}

	// The cluster views agree on the shard map.
	var hc api.ClusterResponse
	if code, e := httpCall(t, http.MethodGet, web(0)+api.PathCluster, nil, &hc); code != 200 {
		t.Fatalf("HTTP cluster: %d %+v", code, e)
	}
	gc, err := c.clients[0].Cluster(ctx, &lockstepv1.ClusterRequest{})
	if err != nil || gc.GetMapVersion() != hc.MapVersion || len(gc.GetShards()) != len(hc.Shards) || len(gc.GetNodes()) != len(hc.Nodes) {
		t.Fatalf("gRPC cluster %v %v, HTTP %+v", gc, err, hc)
	}
}

// Goal: gRPC's stale status carries caught_up as HTTP's does, and a status
// through the leader leaves it unset. Method: a three-shard cluster; a
// stale status on a member turns caught_up true once its shard caught up
// (the read catches up itself); a status without stale has no caught_up.
func TestGRPCStaleStatusSaysCaughtUp(t *testing.T) {
	c := startGRPCCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitFor(t, func() bool {
		st, err := c.clients[1].Status(ctx, &lockstepv1.StatusRequest{Resource: "r", Stale: true})
		return err == nil && st.CaughtUp != nil && st.GetCaughtUp()
	})
	st, err := c.clients[1].Status(ctx, &lockstepv1.StatusRequest{Resource: "r"})
	if err != nil || st.CaughtUp != nil {
		t.Fatalf("status through the leader = %v %v, want no caught_up", st, err)
	}
}

// Goal: gRPC's Validate is GET /lock/validate: a held lock's token is
// valid on every member, in both APIs alike, another token is not, and
// after the release it is not; a stale validate says so and carries
// caught_up; a missing resource or a zero token is INVALID_ARGUMENT.
// Method: a three-shard cluster; acquire over gRPC, validate over gRPC
// and HTTP at each member, release, validate again; then the bad inputs.
func TestGRPCValidate(t *testing.T) {
	c := startGRPCCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := c.clients[0].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "v1", ClientId: "A", TtlMs: 60_000})
	if err != nil || !got.GetGranted() {
		t.Fatalf("gRPC acquire: %v %v", got, err)
	}
	token := got.GetFencingToken()
	for i := range 3 {
		v, err := c.clients[i].Validate(ctx, &lockstepv1.ValidateRequest{Resource: "v1", Token: token})
		if err != nil || !v.GetValid() || v.GetToken() != token || v.GetResource() != "v1" || v.GetHolderTokenMax() != token ||
			v.GetStale() || v.CaughtUp != nil || v.GetLogTimeMs() <= 0 {
			t.Fatalf("member %d: gRPC validate of the held token = %v %v", i, v, err)
		}
		var hv api.ValidateResponse
		u := fmt.Sprintf("http://%s%s?resource=v1&token=%d", c.members[i].Addr(), api.PathValidate, token)
		if code, e := httpCall(t, http.MethodGet, u, nil, &hv); code != 200 || hv.Valid != v.GetValid() || hv.HolderTokenMax != v.GetHolderTokenMax() {
			t.Fatalf("member %d: HTTP validate %d %+v %+v, gRPC %v", i, code, hv, e, v)
		}
		other, err := c.clients[i].Validate(ctx, &lockstepv1.ValidateRequest{Resource: "v1", Token: token + 1})
		if err != nil || other.GetValid() || other.GetHolderTokenMax() != token {
			t.Fatalf("member %d: gRPC validate of another token = %v %v", i, other, err)
		}
	}
	waitFor(t, func() bool {
		v, err := c.clients[1].Validate(ctx, &lockstepv1.ValidateRequest{Resource: "v1", Token: token, Stale: true})
		return err == nil && v.GetValid() && v.GetStale() && v.CaughtUp != nil && v.GetCaughtUp()
	})

	if _, err := c.clients[2].Release(ctx, &lockstepv1.ReleaseRequest{Resource: "v1", LeaseId: got.GetLeaseId()}); err != nil {
		t.Fatalf("gRPC release: %v", err)
	}
	for i := range 3 {
		v, err := c.clients[i].Validate(ctx, &lockstepv1.ValidateRequest{Resource: "v1", Token: token})
		if err != nil || v.GetValid() || v.GetHolderTokenMax() != 0 {
			t.Fatalf("member %d: gRPC validate after release = %v %v", i, v, err)
		}
	}

	for _, in := range []*lockstepv1.ValidateRequest{{Resource: "v1"}, {Token: token}, {Resource: "v1", Stale: true}} {
		_, err := c.clients[1].Validate(ctx, in)
		if grpcstatus.Code(err) != codes.InvalidArgument || grpcapi.APIError(err).Code != api.CodeInvalidArgument {
			t.Errorf("gRPC validate %v: %v, want INVALID_ARGUMENT (%s)", in, err, api.CodeInvalidArgument)
		}
	}
}
