package nemesis

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstep/lockstep/core/ctxtime"
	"math/rand/v2"
	"slices"
	"time"
)

// fault is a nemesis that applies one change, holds it for the window, then
// undoes it. Most catalogue entries are faults; they differ in whom they
// pick and what they change.
type fault struct {
	name      string
	available func(c Cluster) bool
	// apply makes the change and says what it hit and how to undo it. A
	// non-nil undo means something changed (even alongside an error, e.g. a
	// multi-node wipe that failed half-way), so Inject must undo and record it.
	apply func(c Cluster, rng *rand.Rand) (target string, undo func() error, err error)
}

var _ Nemesis = (*fault)(nil)

func (f *fault) Name() string { return f.name }

func (f *fault) Available(c Cluster) bool { return f.available(c) }

// Inject applies the fault, holds it for d or until ctx ends, and always
// undoes it. It returns ctx's error when cut short.
func (f *fault) Inject(ctx context.Context, c Cluster, rng *rand.Rand, d time.Duration, rec Recorder) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !f.available(c) {
		return fmt.Errorf("%s: %w", f.name, ErrNotApplicable)
	}
	start := time.Now()
	target, undo, applyErr := f.apply(c, rng)
	if undo == nil {
		return fmt.Errorf("%s: %w", f.name, applyErr)
	}
	var held error
	if applyErr == nil {
		held = ctxtime.Sleep(ctx, d)
	} else {
		applyErr = fmt.Errorf("%s on %s: %w", f.name, target, applyErr)
	}
	undoErr := undo()
	if undoErr != nil {
		undoErr = fmt.Errorf("%s: undo on %s: %w", f.name, target, undoErr)
	}
	rec.Fault(f.name, target, start, time.Now())
	return errors.Join(applyErr, undoErr, held)
}

// uniform draws a duration in [lo, hi].
func uniform(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// shuffled returns the cluster's nodes in an order drawn from rng, leaving
// the cluster's slice untouched.
func shuffled(c Cluster, rng *rand.Rand) []string {
	nodes := slices.Clone(c.Nodes())
	rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	return nodes
}

// role says which node a single-node nemesis targets.
type role int

const (
	anyNode role = iota
	leaderNode
	followerNode
)

// available reports whether c currently has a node in role r.
func (r role) available(c Cluster) bool {
	n := len(c.Nodes())
	_, hasLeader := c.Leader()
	switch r {
	case leaderNode:
		return hasLeader
	case followerNode:
		return hasLeader && n >= 2
	default:
		return n >= 1
	}
}

// pick chooses a node in role r; the leader may have gone since Available.
func (r role) pick(c Cluster, rng *rand.Rand) (string, error) {
	nodes := c.Nodes()
	if r == anyNode {
		if len(nodes) == 0 {
			return "", fmt.Errorf("no nodes: %w", ErrNotApplicable)
		}
		return nodes[rng.IntN(len(nodes))], nil
	}
	lead, ok := c.Leader()
	if !ok {
		return "", fmt.Errorf("no leader: %w", ErrNotApplicable)
	}
	if r == leaderNode {
		return lead, nil
	}
	followers := slices.DeleteFunc(slices.Clone(nodes), func(id string) bool { return id == lead })
	if len(followers) == 0 {
		return "", fmt.Errorf("no follower: %w", ErrNotApplicable)
	}
	return followers[rng.IntN(len(followers))], nil
}

// nodeFault builds a fault acting on one node picked by r in clusters of at
// least minNodes. act applies the change to id and returns a detail for the
// recorded target (e.g. the drawn clock offset) and the undo.
func nodeFault(name string, r role, minNodes int, act func(c Cluster, rng *rand.Rand, id string) (detail string, undo func() error, err error)) *fault {
	return &fault{
		name: name,
		available: func(c Cluster) bool {
			return len(c.Nodes()) >= minNodes && r.available(c)
		},
		apply: func(c Cluster, rng *rand.Rand) (string, func() error, error) {
			id, err := r.pick(c, rng)
			if err != nil {
				return "", nil, err
			}
			detail, undo, err := act(c, rng, id)
			if detail != "" {
				id += " " + detail
			}
			return id, undo, err
		},
	}
}
