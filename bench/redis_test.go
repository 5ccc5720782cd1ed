package bench

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// TestRedisTarget starts redis-server (skipped where it is not installed),
// checks the SET NX / compare-and-delete recipe, then a short contended run.
func TestRedisTarget(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	target, err := NewRedisTarget(ctx, RedisOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()

	a, err := target.NewLocker(ctx, ClientConfig{ID: "a", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := target.NewLocker(ctx, ClientConfig{ID: "b", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	req := AcquireRequest{Key: "k", TTL: time.Second, Mode: api.Exclusive}
	ga, err := a.Acquire(ctx, req)
	if err != nil || !ga.Granted {
		t.Fatalf("a: %+v %v", ga, err)
	}
	if gb, err := b.Acquire(ctx, req); err != nil || gb.Granted {
		t.Fatalf("b try-lock on held key: %+v %v", gb, err)
	}
	if err := b.Release(ctx, Grant{Key: "k", Lease: "not-ours"}); !errors.Is(err, ErrNotHolder) {
		t.Fatalf("foreign release: %v, want ErrNotHolder", err)
	}
	if err := a.Release(ctx, ga); err != nil {
		t.Fatal(err)
	}

	r, err := Run(ctx, target, shortWorkload("contended", false))
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops <= 0 || r.ErrorCount() != 0 || r.Policy != "native" || r.Traits.Fencing {
		t.Fatalf("redis run: ops %d errors %v (%v) policy %s traits %+v", r.Ops, r.Errors, r.ErrorSamples, r.Policy, r.Traits)
	}
}
