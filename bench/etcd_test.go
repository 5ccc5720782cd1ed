//go:build peers

package bench

import (
	"context"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// TestEtcdTarget starts a one-member embedded etcd, checks mutual exclusion
// and that tokens (create revisions) grow across holders, then does a short
// contended run.
func TestEtcdTarget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	target, err := NewEtcdTarget(ctx, EtcdOptions{Members: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-in first-out: clients close before the server does,
	// so their lease revokes are answered instead of timing out.
	t.Cleanup(func() { _ = target.Close() })

	newLocker := func(id string) Locker {
		l, err := target.NewLocker(ctx, ClientConfig{ID: id, TTL: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	a, b := newLocker("a"), newLocker("b")
	try := AcquireRequest{Key: "k", TTL: 5 * time.Second, Mode: api.Exclusive}
	ga, err := a.Acquire(ctx, try)
	if err != nil || !ga.Granted {
		t.Fatalf("a: %+v %v", ga, err)
	}
	if gb, err := b.Acquire(ctx, try); err != nil || gb.Granted {
		t.Fatalf("b try-lock on held key: %+v %v", gb, err)
	}
	waiting := try
	waiting.Wait = 50 * time.Millisecond
	if gb, err := b.Acquire(ctx, waiting); err != nil || gb.Granted {
		t.Fatalf("b wait on held key: %+v %v, want timed out", gb, err)
	}
	if err := a.Release(ctx, ga); err != nil {
		t.Fatal(err)
	}
	gb, err := b.Acquire(ctx, try)
	if err != nil || !gb.Granted || gb.Token <= ga.Token {
		t.Fatalf("b after release: %+v %v (a's token %d)", gb, err, ga.Token)
	}
	if err := b.Release(ctx, gb); err != nil {
		t.Fatal(err)
	}

	r, err := Run(ctx, target, shortWorkload("contended", false))
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops <= 0 || r.ErrorCount() != 0 || !r.Traits.Fencing {
		t.Fatalf("etcd run: ops %d errors %v (%v) traits %+v", r.Ops, r.Errors, r.ErrorSamples, r.Traits)
	}
}
