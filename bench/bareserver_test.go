package bench

import (
	"context"
	"errors"
	"github.com/lockstep/lockstep/core/ctxtime"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// newBareLocker starts a bare server and returns a client factory for it.
func newBareLocker(t *testing.T) (*BareServer, func(id string, policy api.Policy) *HTTPLocker) {
	t.Helper()
	srv, err := NewBareServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, func(id string, policy api.Policy) *HTTPLocker {
		l, err := NewHTTPLocker(HTTPLockerOptions{URLs: []string{srv.URL()}, ClientID: id, Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
}

// waitQueue polls until key has n waiters (bounded by the test context).
func waitQueue(ctx context.Context, t *testing.T, srv *BareServer, key string, n int) {
	t.Helper()
	for srv.Waiting(key) != n {
		if err := ctxtime.Sleep(ctx, time.Millisecond); err != nil {
			t.Fatalf("queue of %s never reached %d (at %d)", key, n, srv.Waiting(key))
		}
	}
}

// TestBareServerFIFOHandoff queues two waiters in a known order behind a
// holder and checks that releases hand the lock over in that order.
func TestBareServerFIFOHandoff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv, newLocker := newBareLocker(t)
	a, b, c := newLocker("a", api.FIFO), newLocker("b", api.FIFO), newLocker("c", api.FIFO)
	req := AcquireRequest{Key: "k", TTL: 10 * time.Second, Wait: 3 * time.Second, Mode: api.Exclusive}

	ga, err := a.Acquire(ctx, req)
	if err != nil || !ga.Granted {
		t.Fatalf("a: %+v %v", ga, err)
	}
	type outcome struct {
		who string
		g   Grant
		err error
	}
	got := make(chan outcome, 2)
	go func() { g, err := b.Acquire(ctx, req); got <- outcome{"b", g, err} }()
	waitQueue(ctx, t, srv, "k", 1)
	go func() { g, err := c.Acquire(ctx, req); got <- outcome{"c", g, err} }()
	waitQueue(ctx, t, srv, "k", 2)

	if err := a.Release(ctx, ga); err != nil {
		t.Fatal(err)
	}
	first := <-got
	if first.err != nil || !first.g.Granted || first.who != "b" {
		t.Fatalf("first grant after release: %+v, want b", first)
	}
	if first.g.Token <= ga.Token {
		t.Errorf("fencing token did not grow: %d after %d", first.g.Token, ga.Token)
	}
	lockers := map[string]*HTTPLocker{"b": b, "c": c}
	if err := lockers[first.who].Release(ctx, first.g); err != nil {
		t.Fatal(err)
	}
	second := <-got
	if second.err != nil || !second.g.Granted || second.who != "c" {
		t.Fatalf("second grant: %+v, want c", second)
	}
}

// TestBareServerTryLockReleaseAndExpiry checks try-lock refusal, release of
// an unknown lease (not holder), lease expiry, and shared compatibility.
func TestBareServerTryLockReleaseAndExpiry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, newLocker := newBareLocker(t)
	a, b := newLocker("a", api.FIFO), newLocker("b", api.Throughput)

	short := AcquireRequest{Key: "x", TTL: 50 * time.Millisecond, Mode: api.Exclusive}
	ga, err := a.Acquire(ctx, short)
	if err != nil || !ga.Granted {
		t.Fatalf("a: %+v %v", ga, err)
	}
	if g, err := b.Acquire(ctx, short); err != nil || g.Granted {
		t.Fatalf("try-lock on a held key: %+v %v, want not granted", g, err)
	}
	if err := b.Release(ctx, Grant{Key: "x", Lease: "nope"}); !errors.Is(err, ErrNotHolder) {
		t.Fatalf("release of unknown lease: %v, want ErrNotHolder", err)
	}
	// a's lease expires after 50ms; b's wait outlasts it.
	g, err := b.Acquire(ctx, AcquireRequest{Key: "x", TTL: time.Second, Wait: 2 * time.Second, Mode: api.Exclusive})
	if err != nil || !g.Granted {
		t.Fatalf("acquire after expiry: %+v %v", g, err)
	}
	if err := a.Release(ctx, ga); !errors.Is(err, ErrNotHolder) {
		t.Fatalf("release of expired lease: %v, want ErrNotHolder", err)
	}

	shared := AcquireRequest{Key: "s", TTL: time.Second, Mode: api.Shared}
	for _, l := range []*HTTPLocker{a, b} {
		if g, err := l.Acquire(ctx, shared); err != nil || !g.Granted {
			t.Fatalf("shared acquire: %+v %v", g, err)
		}
	}
	if g, err := a.Acquire(ctx, AcquireRequest{Key: "s", TTL: time.Second, Mode: api.Exclusive}); err != nil || g.Granted {
		t.Fatalf("exclusive over shared holders: %+v %v, want not granted", g, err)
	}
}

// TestBareServerThroughputRacers parks two throughput racers behind a holder
// and checks that each free hands the lock to exactly one of them, and that
// a racer whose wait runs out leaves empty-handed.
func TestBareServerThroughputRacers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv, newLocker := newBareLocker(t)
	a := newLocker("a", api.FIFO)
	racers := []*HTTPLocker{newLocker("b", api.Throughput), newLocker("c", api.Throughput)}
	req := AcquireRequest{Key: "k", TTL: 10 * time.Second, Wait: 3 * time.Second, Mode: api.Exclusive}

	ga, err := a.Acquire(ctx, req)
	if err != nil || !ga.Granted {
		t.Fatalf("a: %+v %v", ga, err)
	}
	type outcome struct {
		idx int
		g   Grant
		err error
	}
	got := make(chan outcome, len(racers))
	for i, l := range racers {
		go func() { g, err := l.Acquire(ctx, req); got <- outcome{i, g, err} }()
	}
	waitQueue(ctx, t, srv, "k", 2)
	if err := a.Release(ctx, ga); err != nil {
		t.Fatal(err)
	}
	first := <-got
	if first.err != nil || !first.g.Granted {
		t.Fatalf("first racer: %+v", first)
	}
	waitQueue(ctx, t, srv, "k", 1) // the loser is parked again, not granted
	if err := racers[first.idx].Release(ctx, first.g); err != nil {
		t.Fatal(err)
	}
	if second := <-got; second.err != nil || !second.g.Granted || second.idx == first.idx {
		t.Fatalf("second racer: %+v (first was %d)", second, first.idx)
	}

	short := req
	short.Wait = 50 * time.Millisecond
	if g, err := racers[first.idx].Acquire(ctx, short); err != nil || g.Granted {
		t.Fatalf("racer on a held key: %+v %v, want not granted", g, err)
	}
	waitQueue(ctx, t, srv, "k", 0)
}
