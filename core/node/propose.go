package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep/lockstep/core/codec"
	"github.com/lockstep/lockstep/core/lock"
)

// Forwarder carries a command from a follower to the leader and the
// leader's result back. Implementations: HTTP between lockd processes, the
// simulated network in sim/.
type Forwarder interface {
	// Forward returns the leader's encoded lock.Result for the encoded
	// command. It returns an error wrapping ErrNotLeader when the target
	// refused before proposing, ErrUnavailable when the command surely did
	// not arrive, and anything else when the outcome is unknown.
	Forward(ctx context.Context, leader Peer, cmd []byte) ([]byte, error)
}

// retryDelay is how long a proposer waits for a leader to appear.
const retryDelay = 10 * time.Millisecond

// propose gets cmd applied by the current leader, from any node. It retries
// only while the command surely was not proposed (no leader yet, the target
// was not leader), so a command is never applied twice by a retry here.
func (n *Node) propose(ctx context.Context, cmd lock.Command) (res lock.Result, err error) {
	defer n.stageSince(StagePropose, time.Now())
	ctx, span := n.startPropose(ctx, &cmd)
	defer func() { endSpan(span, err) }()
	if n.bug(BugUnknownAsUnavailable) {
		defer func() {
			if errors.Is(err, ErrIndeterminate) {
				err = fmt.Errorf("%w: %v", ErrUnavailable, err)
			}
		}()
	}
	// Encoded once, here: these bytes are what a leader (this node or
	// another) puts in its entry and every replica's state machine reads.
	// Mono and Suspects stay zero: the leader stamps the entry instead.
	buf := codec.AppendCommand(nil, &cmd)
	var lost time.Time // since when no leader could be reached
	for attempt := 0; ; attempt++ {
		select {
		case <-n.done:
			return lock.Result{}, ErrShutdown
		default:
		}
		if n.raft.State() == raft.Leader {
			res, err := n.applyLocal(ctx, buf)
			// A leader handing the group over takes no entries for up to
			// an election timeout, like a group electing one: wait for the
			// outcome instead of failing a request raft surely refused.
			if !errors.Is(err, ErrNotLeader) && !errors.Is(err, raft.ErrLeadershipTransferInProgress) {
				return res, err
			}
		} else if leader, ok := n.Leader(); ok && leader.ID != n.cfg.ID {
			sent := time.Now()
			fctx, fspan := n.startForward(ctx, leader)
			out, err := n.forward(fctx, leader, &cmd, buf)
			endSpan(fspan, err)
			n.stageSince(StageForward, sent)
			if err == nil {
				res, derr := codec.DecodeResult(out)
				if derr != nil {
					return lock.Result{}, fmt.Errorf("%w: leader reply: %w", ErrIndeterminate, derr)
				}
				return res, nil
			}
			if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrUnavailable) {
				return lock.Result{}, fmt.Errorf("%w: forward to %s: %w", ErrIndeterminate, leader.ID, err)
			}
		}
		// A node that cannot route says so quickly, with what it knows,
		// rather than holding the request until its deadline.
		if lost.IsZero() {
			lost = time.Now()
		} else if time.Since(lost) >= n.cfg.NoLeaderAfter {
			leader, _ := n.Leader()
			return lock.Result{}, fmt.Errorf("%w: no reachable leader for %s (group %q, leader known: %q)",
				ErrUnavailable, n.cfg.NoLeaderAfter, n.cfg.Group, leader.ID)
		}
		t := time.NewTimer(retryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return lock.Result{}, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		case <-n.done:
			t.Stop()
			return lock.Result{}, ErrShutdown
		case <-t.C:
		}
	}
}

// applyLocal appends cmd (encoded) to the log on this leader, in the next
// entry its proposer sends (stamped with this node's monotonic clock and
// the members it cannot reach), and waits for it to apply.
func (n *Node) applyLocal(ctx context.Context, cmd []byte) (_ lock.Result, err error) {
	ctx, span := n.startNodeSpan(ctx, "raft.apply", trace.SpanKindInternal)
	defer func() { endSpan(span, err) }()
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= 0 {
		return lock.Result{}, fmt.Errorf("%w: deadline passed before proposing", ErrUnavailable)
	}
	submitted := time.Now()
	out := n.proposer.submit(ctx, cmd)
	if out.err != nil {
		return lock.Result{}, out.err
	}
	n.observeApply(submitted, out.returned, out.ap.times)
	n.traceApply(ctx, span, submitted, out.ap.times)
	return out.ap.res, out.ap.err
}

// stamp is what this leader adds to each entry it proposes.
func (n *Node) stamp() codec.Stamp {
	s := codec.Stamp{Mono: int64(n.cfg.Clock.Now())}
	if !n.bug(BugOrphanWaiters) {
		s.Suspects = n.contacts.suspects(time.Now(), n.cfg.UnreachableAfter)
	}
	return s
}

// ServeForward applies a command forwarded by another member. It refuses
// with ErrNotLeader unless this node leads, so the sender may retry. The
// command goes into the log as the sender encoded it.
func (n *Node) ServeForward(ctx context.Context, encoded []byte) (_ []byte, err error) {
	defer n.stageSince(StageServeForward, time.Now())
	ctx, span := n.startNodeSpan(ctx, "node.serve_forward", trace.SpanKindServer)
	defer func() { endSpan(span, err) }()
	if n.raft.State() != raft.Leader {
		return nil, ErrNotLeader
	}
	res, err := n.applyLocal(ctx, encoded)
	if err != nil {
		return nil, err
	}
	return codec.AppendResult(nil, &res), nil
}

// forward sends cmd to leader. A leader that died holds a forward until the
// caller's deadline, so a release forwarded to it stops waiting once raft
// here sees it gone (an election starts): unsent, it then fails as such and
// propose takes it to the next leader. Without this a holder's release,
// retried by its client across two leader kills, could spend every attempt
// on dead leaders and the lease outlived its holder (orphanWaiters seeds 34,
// 55, 199). Only releases: doing this for every command (eaf2046) let
// waiting acquires queued through a killed member time out before its
// restart's hello, and the simulator no longer caught the
// hello-skips-neighbours mutant.
func (n *Node) forward(ctx context.Context, leader Peer, cmd *lock.Command, buf []byte) ([]byte, error) {
	if cmd.Op != lock.OpRelease {
		return n.cfg.Forwarder.Forward(ctx, leader, buf)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := n.contacts.onLeaderLeft(raft.ServerID(leader.ID), cancel)
	defer stop()
	return n.cfg.Forwarder.Forward(ctx, leader, buf)
}
