package lockd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/grpcapi"
	"github.com/lockstep/lockstep/core/lockd"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// TestDeadlockRefusedAtOnce: goal — on a real three-member cluster, an
// acquire whose wait would close a wait-for cycle is answered at once with
// 409 {"code":"deadlock","cycle":[B, A]} (requester first), queues nothing,
// and the request it would have deadlocked with still waits and is granted
// when the cycle's other lock is released. Method: every request through a
// follower, so the leader's answer crosses the forwarding (result codec)
// too; A holds x, B holds y, A waits for y, B asks for x with a wait.
func TestDeadlockRefusedAtOnce(t *testing.T) {
	c := startCluster(t, lockd.LogStoreWAL)
	url := c.url((c.leader()+1)%3) + api.PathAcquire
	var y api.AcquireResponse
	for _, a := range []api.AcquireRequest{{Resource: "x", ClientID: "A", TTLMs: 60_000}, {Resource: "y", ClientID: "B", TTLMs: 60_000}} {
		got, code := post[api.AcquireResponse](t, url, a)
		if code != 200 || !got.Granted {
			t.Fatalf("%s takes %s: %d %+v", a.ClientID, a.Resource, code, got)
		}
		y = got
	}
	waited := make(chan api.AcquireResponse, 1)
	go func() {
		b, _ := json.Marshal(api.AcquireRequest{Resource: "y", ClientID: "A", TTLMs: 60_000, WaitMs: 30_000})
		resp, err := http.Post(url, "application/json", bytes.NewReader(b))
		var out api.AcquireResponse
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
		}
		waited <- out
	}()
	waitFor(t, func() bool { return len(status(t, c.url(0), "y").Queue) == 1 })

	b, _ := json.Marshal(api.AcquireRequest{Resource: "x", ClientID: "B", TTLMs: 60_000, WaitMs: 20_000})
	start := time.Now()
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var refused api.Error
	if resp.StatusCode != http.StatusConflict || json.Unmarshal(raw, &refused) != nil || refused.Code != api.CodeDeadlock ||
		!slices.Equal(refused.Cycle, []string{"B", "A"}) {
		t.Fatalf("B's wait for x: %d %s, want 409 deadlock with cycle [B A]", resp.StatusCode, raw)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the refusal took %v: it should not wait", took)
	}
	if q := status(t, c.url(0), "x").Queue; len(q) != 0 {
		t.Errorf("x's queue after the refusal: %+v, want empty", q)
	}
	if q := status(t, c.url(0), "y").Queue; len(q) != 1 || q[0].ClientID != "A" {
		t.Fatalf("y's queue after the refusal: %+v, want A still waiting", q)
	}

	released, code := post[api.ReleaseResponse](t, c.url(0)+api.PathRelease, api.ReleaseRequest{Resource: "y", LeaseID: y.LeaseID})
	if code != 200 || !released.Released {
		t.Fatalf("B releases y: %d %+v", code, released)
	}
	select {
	case got := <-waited:
		if !got.Granted {
			t.Fatalf("A's wait for y ended %+v, want granted", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("A's wait for y did not end after B released y")
	}
}

// TestGRPCDeadlock: goal — over gRPC, a wait closing a cycle inside one
// shard ends the call with ABORTED whose ErrorInfo carries reason deadlock
// and the cycle, as HTTP's 409 does. Method: three members, three shards,
// resources sharing a hash tag (one shard); A holds x and waits for y, B
// holds y and asks for x.
func TestGRPCDeadlock(t *testing.T) {
	c := startGRPCCluster(t)
	ctx := context.Background()
	x, y := "{dl}x", "{dl}y"
	if _, err := c.clients[0].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: x, ClientId: "A", TtlMs: 60_000}); err != nil {
		t.Fatal(err)
	}
	held, err := c.clients[1].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: y, ClientId: "B", TtlMs: 60_000})
	if err != nil || !held.GetGranted() {
		t.Fatalf("B takes y: %v %v", held, err)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := c.clients[2].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: y, ClientId: "A", TtlMs: 60_000, WaitMs: 20_000})
		waited <- err
	}()
	waitFor(t, func() bool { _, q := grpcStatus(t, c.clients[0], y); return len(q) == 1 })
	_, err = c.clients[1].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: x, ClientId: "B", TtlMs: 60_000, WaitMs: 5_000})
	got := grpcapi.APIError(err)
	if grpcstatus.Code(err) != codes.Aborted || got.Code != api.CodeDeadlock || !slices.Equal(got.Cycle, []string{"B", "A"}) {
		t.Fatalf("B's wait for x: %v (%+v), want ABORTED deadlock with cycle [B A]", err, got)
	}
	if _, err := c.clients[1].Release(ctx, &lockstepv1.ReleaseRequest{Resource: y, LeaseId: held.GetLeaseId()}); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("A's wait for y after B released it: %v", err)
	}
}
