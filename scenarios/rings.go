package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockstep/lockstep/core/api"
	lockclient "github.com/lockstep/lockstep/core/client"
	"github.com/lockstep/lockstep/core/ctxtime"
)

// DeadlockRings makes the clients build wait-for cycles on purpose (issue
// 31). Clients form rings of ringSlots in order (c1-c4, c5-c8, ...). Every
// RoundMs each ring draws, from the seed and the round alone (so every
// member draws alike), a size k in 2..ringSlots and whether the round is
// open: member i < k takes its own resource, waits HoldMs for the others to
// take theirs, then asks with a wait of WaitMs for member i+1's (mod k), so
// the last of them to ask closes a cycle. In an open round the last member
// asks for a resource nobody holds instead: a chain, no cycle, and nobody
// may be refused as a deadlock. Whoever is refused releases what it holds,
// which lets the chain behind it through. Each round has resources of its
// own, so a lease a fault left behind blocks no later round.
type DeadlockRings struct {
	RoundMs  int64   `json:"round_ms"`
	HoldMs   int64   `json:"hold_ms"`
	WaitMs   int64   `json:"wait_ms"`
	TTLMs    int64   `json:"ttl_ms"`
	OpenProb float64 `json:"open_prob"`
}

// ringSlots is the most members one ring has (the largest cycle).
const ringSlots = 4

// ringRound is what one ring does in one round.
type ringRound struct {
	size int
	open bool
}

// ringRoundOf draws ring's round r from the workload seed.
func (wl *workload) ringRoundOf(ring, r int) ringRound {
	rng := rand.New(rand.NewPCG(wl.seed^uint64(ring+1)*0x9e3779b97f4a7c15, uint64(r)))
	return ringRound{size: 2 + rng.IntN(ringSlots-1), open: rng.Float64() < wl.w.DeadlockRings.OpenProb}
}

// ringLoop is a client of DeadlockRings: one round after another until ctx
// ends.
func (wl *workload) ringLoop(ctx context.Context, cl *client) {
	cfg := wl.w.DeadlockRings
	ring, slot := cl.idx/ringSlots, cl.idx%ringSlots
	round := time.Duration(cfg.RoundMs) * time.Millisecond
	for r := 0; ctx.Err() == nil; r++ {
		if ctxtime.Sleep(ctx, time.Until(wl.started.Add(time.Duration(r)*round))) != nil {
			return
		}
		rr := wl.ringRoundOf(ring, r)
		if slot >= rr.size {
			continue
		}
		name := func(i int) string { return wl.ringResource(ring, r, i) }
		next := name((slot + 1) % rr.size)
		if rr.open && slot == rr.size-1 {
			next = name(ringSlots) // nobody takes it: the chain ends here
		}
		wl.ringTurn(ctx, cl, name(slot), next)
	}
}

// ringResource names member i's resource of ring's round r. With several
// groups the members' resources alternate between them, so most cycles
// run through several groups (none can see them whole: the cross-shard
// detector must break them).
func (wl *workload) ringResource(ring, r, i int) string {
	name := fmt.Sprintf("ring%d-%d-%d", ring+1, r, i)
	groups := wl.c.GroupCount()
	if groups < 2 {
		return name
	}
	for k := 0; ; k++ {
		if n := fmt.Sprintf("%s-%d", name, k); wl.c.GroupOf(n) == i%groups {
			return n
		}
	}
}

// ringTurn takes own, then asks for next with a wait, and releases what
// it got.
func (wl *workload) ringTurn(ctx context.Context, cl *client, own, next string) {
	cfg := wl.w.DeadlockRings
	ask := func(resource string, wait time.Duration) (*lockclient.Lease, error) {
		cl.requests++
		opts := lockclient.AcquireOptions{TTL: time.Duration(cfg.TTLMs) * time.Millisecond, Mode: api.Exclusive, Wait: wait,
			RequestID: fmt.Sprintf("%s-%d", cl.name, cl.requests)}
		l, err := wl.acquire(ctx, cl, resource, opts, 0)
		if err == nil {
			wl.rec.fenced.RecordGrantReturned(resource, cl.name, l.ID(), l.Token())
			if l.Valid() {
				wl.rec.fenced.Write(resource, cl.name, l.ID(), l.Token(), false)
			}
		}
		return l, err
	}
	mine, err := ask(own, time.Duration(cfg.HoldMs)*time.Millisecond)
	if err != nil {
		return
	}
	defer wl.release(ctx, mine)
	if ctxtime.Sleep(ctx, time.Duration(cfg.HoldMs)*time.Millisecond) != nil {
		return
	}
	got, err := ask(next, time.Duration(cfg.WaitMs)*time.Millisecond)
	if err != nil {
		// Refused (a deadlock, lockclient.ErrDeadlock), timed out or
		// failed: the defer releases own, so whoever waits for it moves on.
		return
	}
	_ = ctxtime.Sleep(ctx, time.Duration(cfg.HoldMs)*time.Millisecond/4)
	wl.release(ctx, got)
}
