package lockd_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/client"
	"github.com/lockstep/lockstep/core/grpcapi"
	"github.com/lockstep/lockstep/core/lockd"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// TestSemaphoreOnRealCluster: goal — a semaphore of 2 on three real
// members: two clients hold at once with distinct increasing tokens, a
// third waits in FIFO and is granted (with a larger token) when one
// releases; other permits are refused as permits_mismatch; status at a
// follower (the answer forwarded from the leader) shows permits 2, both
// holders and the waiter; validate calls each holder's token valid.
func TestSemaphoreOnRealCluster(t *testing.T) {
	c := startCluster(t, lockd.LogStoreWAL)
	lead := c.leader()
	follower := (lead + 1) % 3
	var endpoints []string
	for i := range c.peers {
		endpoints = append(endpoints, c.url(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	newClient := func(id string) *client.Client {
		cl, err := client.New(client.Config{Endpoints: endpoints, ClientID: id})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}
	opts := client.AcquireOptions{TTL: 20 * time.Second, Permits: 2}
	a, err := newClient("A").Acquire(ctx, "pool", opts)
	if err != nil {
		t.Fatalf("A: %v", err)
	}
	b, err := newClient("B").Acquire(ctx, "pool", opts)
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	if b.Token() <= a.Token() {
		t.Fatalf("tokens A #%d, B #%d: want distinct and increasing", a.Token(), b.Token())
	}
	cl := newClient("C")
	granted := make(chan *client.Lease, 1)
	go func() {
		waiting := opts
		waiting.Wait = 30 * time.Second
		l, err := cl.Acquire(ctx, "pool", waiting)
		if err != nil {
			t.Errorf("C's queued acquire: %v", err)
		}
		granted <- l
	}()
	waitFor(t, func() bool { return len(status(t, c.url(follower), "pool").Queue) == 1 })

	st := status(t, c.url(follower), "pool")
	if st.Permits != 2 || len(st.Holders) != 2 || st.Queue[0].ClientID != "C" {
		t.Fatalf("status at a follower: %+v, want permits 2, A and B holding, C queued", st)
	}
	for _, l := range []*client.Lease{a, b} {
		if valid, err := cl.Validate(ctx, "pool", l.Token()); err != nil || !valid {
			t.Fatalf("validate #%d: %v, %v; want valid", l.Token(), valid, err)
		}
	}
	var apiErr *client.APIError
	for _, permits := range []int{3, 0} {
		_, err := newClient("D").Acquire(ctx, "pool", client.AcquireOptions{TTL: time.Second, Permits: permits})
		if !errors.As(err, &apiErr) || apiErr.Code != api.CodePermitsMismatch || apiErr.Status != 409 {
			t.Fatalf("permits %d on a semaphore of 2: %v, want 409 %s", permits, err, api.CodePermitsMismatch)
		}
	}

	if err := a.Release(ctx); err != nil {
		t.Fatalf("release A: %v", err)
	}
	got := <-granted
	if got == nil || got.Token() <= b.Token() {
		t.Fatalf("C granted %v, want a token above #%d", got, b.Token())
	}
	st = status(t, c.url(lead), "pool")
	if st.Permits != 2 || len(st.Holders) != 2 || len(st.Queue) != 0 {
		t.Fatalf("status after the handoff: %+v, want B and C holding", st)
	}
	_ = b.Release(ctx)
	_ = got.Release(ctx)
	if st = status(t, c.url(follower), "pool"); len(st.Holders) != 0 || st.Permits != 0 {
		waitFor(t, func() bool { st = status(t, c.url(follower), "pool"); return len(st.Holders) == 0 && st.Permits == 0 })
	}
}

// TestGRPCSemaphore: goal — gRPC carries permits as HTTP does: a permit of
// a semaphore of 2 granted beside another, status showing permits,
// mismatch FAILED_PRECONDITION permits_mismatch, bad permits
// INVALID_ARGUMENT bad_permits.
func TestGRPCSemaphore(t *testing.T) {
	c := startGRPCCluster(t)
	ctx := context.Background()
	acquire := func(i int, client string, permits int64) (*lockstepv1.AcquireResponse, error) {
		return c.clients[i].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "pool", ClientId: client, TtlMs: 20000, Permits: permits})
	}
	first, err := acquire(0, "a", 2)
	if err != nil || !first.GetGranted() {
		t.Fatalf("first permit: %v, %v", first, err)
	}
	second, err := acquire(1, "b", 2)
	if err != nil || !second.GetGranted() || second.GetFencingToken() <= first.GetFencingToken() {
		t.Fatalf("second permit: %v, %v; want granted above #%d", second, err, first.GetFencingToken())
	}
	st, err := c.clients[2].Status(ctx, &lockstepv1.StatusRequest{Resource: "pool"})
	if err != nil || st.GetPermits() != 2 || len(st.GetHolders()) != 2 {
		t.Fatalf("status: %v, %v; want permits 2, two holders", st, err)
	}
	for _, tc := range []struct {
		permits int64
		code    api.Code
		grpc    codes.Code
	}{
		{3, api.CodePermitsMismatch, codes.FailedPrecondition},
		{2000, api.CodeBadPermits, codes.InvalidArgument},
	} {
		_, err := acquire(2, "c", tc.permits)
		if grpcstatus.Code(err) != tc.grpc || grpcapi.APIError(err).Code != tc.code || !strings.Contains(err.Error(), "permits") {
			t.Errorf("permits %d: %v, want %v %s", tc.permits, err, tc.grpc, tc.code)
		}
	}
}
