package nemesis

import (
	"context"
	"fmt"
	"github.com/lockstep/lockstep/core/ctxtime"
	"math/rand/v2"
	"time"
)

// electionTimer is implemented by clusters that know their Raft election
// timeout; thrashLeader paces its rounds by it.
type electionTimer interface {
	ElectionTimeout() time.Duration
}

const (
	// defaultElectionTimeout is core/node's default, used when the cluster
	// does not say.
	defaultElectionTimeout = 500 * time.Millisecond
	// thrashRoundsMax bounds the rounds of one Inject; a long window ends
	// healed once they are used up.
	thrashRoundsMax = 64
)

// thrashLeader keeps knocking out whoever leads now, for the whole window:
// each round isolates or pauses the current leader for one to two election
// timeouts, heals, and waits as long again so that a successor can emerge.
// Every round is recorded as its own fault window.
type thrashLeader struct{}

var _ Nemesis = thrashLeader{}

func (thrashLeader) Name() string { return "thrashLeader" }

func (thrashLeader) Available(c Cluster) bool {
	_, ok := c.Leader()
	return len(c.Nodes()) >= 3 && ok
}

// Inject runs rounds until d is up, ctx ends or thrashRoundsMax rounds ran,
// and always leaves the current round's victim healed.
func (t thrashLeader) Inject(ctx context.Context, c Cluster, rng *rand.Rand, d time.Duration, rec Recorder) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !t.Available(c) {
		return fmt.Errorf("%s: %w", t.Name(), ErrNotApplicable)
	}
	timeout := defaultElectionTimeout
	if et, ok := c.(electionTimer); ok && et.ElectionTimeout() > 0 {
		timeout = et.ElectionTimeout()
	}
	deadline := time.Now().Add(d)
	period := func() time.Duration {
		return min(uniform(rng, timeout, 2*timeout), time.Until(deadline))
	}
	for range thrashRoundsMax {
		if time.Until(deadline) <= 0 {
			return nil
		}
		if lead, ok := c.Leader(); ok {
			if err := t.round(ctx, c, rng, lead, period(), rec); err != nil {
				return err
			}
		}
		if err := ctxtime.Sleep(ctx, period()); err != nil {
			return err
		}
	}
	return ctxtime.Sleep(ctx, time.Until(deadline))
}

// round isolates or pauses lead for d and undoes it.
func (t thrashLeader) round(ctx context.Context, c Cluster, rng *rand.Rand, lead string, d time.Duration, rec Recorder) error {
	start := time.Now()
	var target string
	var undo func()
	if rng.IntN(2) == 0 {
		target = "isolate " + lead
		c.Cut(isolate(c, lead))
		undo = func() { c.Cut(nil) }
	} else {
		target = "pause " + lead
		c.Pause(lead)
		undo = func() { c.Resume(lead) }
	}
	held := ctxtime.Sleep(ctx, d)
	undo()
	rec.Fault(t.Name(), target, start, time.Now())
	return held
}
