package lockd_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/lockstep/lockstep/core/api"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// streamEvent is one message (or the end) of an AcquireStream.
type streamEvent struct {
	position int32
	result   *lockstepv1.AcquireResponse
	err      error
}

// follow reads an AcquireStream into a channel until it ends.
func follow(stream lockstepv1.Lock_AcquireStreamClient) <-chan streamEvent {
	out := make(chan streamEvent, 16)
	go func() {
		defer close(out)
		for {
			ev, err := stream.Recv()
			if err != nil {
				out <- streamEvent{err: err}
				return
			}
			switch e := ev.GetEvent().(type) {
			case *lockstepv1.AcquireEvent_Queued:
				out <- streamEvent{position: e.Queued.GetPosition()}
			case *lockstepv1.AcquireEvent_Result:
				out <- streamEvent{result: e.Result}
			}
		}
	}()
	return out
}

func next(t *testing.T, events <-chan streamEvent) streamEvent {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(15 * time.Second):
		t.Fatal("no stream event within 15s")
		return streamEvent{}
	}
}

// Goal: a streaming acquire tells its waiter where it stands and ends with
// the grant as soon as the holder releases, with no polling by the client.
// Method: A holds "q"; B and C open AcquireStream (on different members,
// one of them not the shard's leader in general) and must see positions 1
// and 2; releasing A must end B's stream with a grant, move C to 1, and
// releasing B must grant C, tokens rising.
func TestGRPCAcquireStreamReportsPositionsAndGrant(t *testing.T) {
	c := startGRPCCluster(t)
	ctx := context.Background()
	held, err := c.clients[0].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "q", ClientId: "A", TtlMs: 60_000})
	if err != nil || !held.GetGranted() {
		t.Fatalf("A: %v %v", held, err)
	}
	open := func(i int, who string) <-chan streamEvent {
		s, err := c.clients[i].AcquireStream(ctx, &lockstepv1.AcquireRequest{Resource: "q", ClientId: who, TtlMs: 60_000, WaitMs: 30_000})
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		return follow(s)
	}
	b := open(1, "B")
	if ev := next(t, b); ev.position != 1 {
		t.Fatalf("B's first event %+v, want position 1", ev)
	}
	cc := open(2, "C")
	if ev := next(t, cc); ev.position != 2 {
		t.Fatalf("C's first event %+v, want position 2", ev)
	}

	if _, err := c.clients[2].Release(ctx, &lockstepv1.ReleaseRequest{Resource: "q", LeaseId: held.GetLeaseId()}); err != nil {
		t.Fatalf("release A: %v", err)
	}
	gb := next(t, b)
	if gb.result == nil || !gb.result.GetGranted() || gb.result.GetFencingToken() <= held.GetFencingToken() {
		t.Fatalf("B after A's release: %+v, want a grant above token %d", gb, held.GetFencingToken())
	}
	if ev := next(t, b); !errors.Is(ev.err, io.EOF) {
		t.Fatalf("B's stream after the result: %+v, want its end", ev)
	}
	if ev := next(t, cc); ev.position != 1 {
		t.Fatalf("C after A's release: %+v, want position 1", ev)
	}
	if _, err := c.clients[0].Release(ctx, &lockstepv1.ReleaseRequest{Resource: "q", LeaseId: gb.result.GetLeaseId()}); err != nil {
		t.Fatalf("release B: %v", err)
	}
	gc := next(t, cc)
	if gc.result == nil || !gc.result.GetGranted() || gc.result.GetFencingToken() <= gb.result.GetFencingToken() {
		t.Fatalf("C after B's release: %+v", gc)
	}
}

// Goal: cancelling a streaming acquire removes its queue entry through the
// log, and a release afterwards grants nobody. Method: A holds "c", B waits
// on a stream until it sees position 1, then cancels; a linearizable
// status (HTTP) must show the queue empty, and after A's release no
// holder: B's request neither stays queued nor is granted.
func TestGRPCAcquireStreamCancelLeavesQueue(t *testing.T) {
	c := startGRPCCluster(t)
	ctx := context.Background()
	held, err := c.clients[0].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "c", ClientId: "A", TtlMs: 60_000})
	if err != nil || !held.GetGranted() {
		t.Fatalf("A: %v %v", held, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	s, err := c.clients[1].AcquireStream(sctx, &lockstepv1.AcquireRequest{Resource: "c", ClientId: "B", TtlMs: 60_000, WaitMs: 30_000})
	if err != nil {
		t.Fatal(err)
	}
	b := follow(s)
	if ev := next(t, b); ev.position != 1 {
		t.Fatalf("B: %+v, want position 1", ev)
	}
	if _, q := httpStatus(t, "http://"+c.members[2].Addr(), "c"); fmt.Sprint(q) != "[B]" {
		t.Fatalf("queue while B waits: %v", q)
	}
	cancel()
	if ev := next(t, b); grpcstatus.Code(ev.err) != codes.Canceled {
		t.Fatalf("B after cancel: %+v, want Canceled", ev)
	}
	waitFor(t, func() bool {
		_, q := httpStatus(t, "http://"+c.members[0].Addr(), "c")
		return len(q) == 0
	})
	var rel api.ReleaseResponse
	if code, e := httpCall(t, http.MethodPost, "http://"+c.members[0].Addr()+api.PathRelease,
		api.ReleaseRequest{Resource: "c", LeaseID: held.GetLeaseId()}, &rel); code != 200 {
		t.Fatalf("release A: %d %+v", code, e)
	}
	if hs, q := httpStatus(t, "http://"+c.members[0].Addr(), "c"); len(hs) != 0 || len(q) != 0 {
		t.Fatalf("after A's release: holders %v queue %v, want none", hs, q)
	}
}

// Goal: one KeepAlive stream keeps 100 leases alive, and a lease that is
// not held gets a per-lease not_holder while the stream goes on. Method:
// take 100 locks with an 8 s TTL over gRPC (long enough that a loaded
// machine takes them all before the first expires), renew all to 60 s over
// one stream (plus one unknown lease), check every answer, wait past the
// original TTL and check through HTTP that all 100 are still held.
func TestGRPCKeepAliveRenewsManyLeases(t *testing.T) {
	c := startGRPCCluster(t)
	ctx := context.Background()
	const leases = 100
	const ttlMs = 8000
	ids := map[string]string{}
	start := time.Now()
	for i := range leases {
		r := fmt.Sprintf("k%d", i)
		got, err := acquireRetrying(ctx, c.clients[i%3], &lockstepv1.AcquireRequest{Resource: r, ClientId: "ka", TtlMs: ttlMs, RequestId: r})
		if err != nil || !got.GetGranted() {
			t.Fatalf("acquire %s: %v %v", r, got, err)
		}
		ids[r] = got.GetLeaseId()
	}
	stream, err := c.clients[1].KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const unknown = "00000000000000000000000000000001"
	send := func(r, id string, ttlMs int64) {
		if err := stream.Send(&lockstepv1.KeepAliveRequest{Resource: r, LeaseId: id, TtlMs: ttlMs}); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	for r, id := range ids {
		send(r, id, 60_000)
	}
	send("k0", unknown, 0)
	renewed, refused, retries := 0, 0, 0
	for renewed+refused < leases+1 {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("recv after %d renewed: %v", renewed, err)
		}
		switch code := api.Code(resp.GetError().GetCode()); {
		case code == api.CodeUnavailable || code == api.CodeOutcomeUnknown:
			// A leader change under a loaded test machine: renew again, as
			// a client would (a renew is safe to repeat).
			if retries++; retries > 10 {
				t.Fatalf("too many transient renew errors: %v", resp)
			}
			send(resp.GetResource(), resp.GetLeaseId(), 60_000)
		case resp.GetLeaseId() == unknown:
			if code != api.CodeNotHolder {
				t.Fatalf("unknown lease: %v, want not_holder", resp)
			}
			refused++
		case code != "" || ids[resp.GetResource()] != resp.GetLeaseId() || resp.GetExpiresInMs() <= ttlMs:
			t.Fatalf("renew answer %v", resp)
		default:
			renewed++
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("stream end: %v, want EOF", err)
	}
	if renewed != leases || refused != 1 {
		t.Fatalf("renewed %d refused %d", renewed, refused)
	}
	time.Sleep(time.Until(start.Add(ttlMs*time.Millisecond + 500*time.Millisecond)))
	for r, id := range ids {
		hs, _ := httpStatus(t, "http://"+c.members[0].Addr(), r)
		if len(hs) != 1 || hs[0].fingerprint != api.LeaseFingerprint(id) {
			t.Fatalf("%s after its first TTL: holders %v", r, hs)
		}
	}
}

// acquireRetrying retries an acquire (same request id, so at most one
// grant) while its outcome is unknown or no leader took it: a loaded test
// machine may change leaders, which no test using it is about.
func acquireRetrying(ctx context.Context, c lockstepv1.LockClient, in *lockstepv1.AcquireRequest) (*lockstepv1.AcquireResponse, error) {
	for attempt := 0; ; attempt++ {
		got, err := c.Acquire(ctx, in)
		code := grpcstatus.Code(err)
		if attempt == 10 || (code != codes.Unavailable && code != codes.DeadlineExceeded) {
			return got, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
