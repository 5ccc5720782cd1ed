package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"go.opentelemetry.io/otel/trace"

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
	var buf []byte
	var lost time.Time // since when no leader could be reached
	for attempt := 0; ; attempt++ {
		select {
		case <-n.done:
			return lock.Result{}, ErrShutdown
		default:
		}
		if n.raft.State() == raft.Leader {
			res, err := n.applyLocal(ctx, cmd)
			// A leader handing the group over takes no entries for up to
			// an election timeout, like a group electing one: wait for the
			// outcome instead of failing a request raft surely refused.
			if !errors.Is(err, ErrNotLeader) && !errors.Is(err, raft.ErrLeadershipTransferInProgress) {
				return res, err
			}
		} else if leader, ok := n.Leader(); ok && leader.ID != n.cfg.ID {
			if buf == nil {
				buf = lock.AppendCommand(nil, &cmd)
			}
			sent := time.Now()
			fctx, fspan := n.startForward(ctx, leader)
			out, err := n.forward(fctx, leader, &cmd, buf)
			endSpan(fspan, err)
			n.stageSince(StageForward, sent)
			if err == nil {
				res, derr := decodeResult(out)
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

// applyLocal appends cmd to the log on this leader, stamped with this
// node's monotonic clock and the members it cannot reach, and waits for it
// to apply.
func (n *Node) applyLocal(ctx context.Context, cmd lock.Command) (_ lock.Result, err error) {
	// hashicorp/raft leaves an entry it took into its apply channel just
	// before shutting down unanswered for ever; Shutdown waits for every
	// apply in progress, and none starts after it.
	if !n.applies.enter() {
		return lock.Result{}, ErrShutdown
	}
	defer n.applies.leave()
	ctx, span := n.startNodeSpan(ctx, "raft.apply", trace.SpanKindInternal)
	defer func() { endSpan(span, err) }()
	cmd.Mono = int64(n.cfg.Clock.Now())
	if !n.bug(BugOrphanWaiters) {
		cmd.Suspects = n.contacts.suspects(time.Now(), n.cfg.UnreachableAfter)
	}
	timeout := n.cfg.ProposeTimeout
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < timeout {
			timeout = left
		}
	}
	if timeout <= 0 {
		return lock.Result{}, fmt.Errorf("%w: deadline passed before proposing", ErrUnavailable)
	}
	called := time.Now()
	data := lock.AppendCommand(nil, &cmd)
	var f raft.ApplyFuture
	if n.window != nil {
		f = n.window.apply(n.raft, data, timeout)
	} else {
		f = n.raft.Apply(data, timeout)
	}
	err = f.Error()
	returned := time.Now()
	if err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader):
			return lock.Result{}, ErrNotLeader
		case errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrLeadershipTransferInProgress):
			// Both refuse the entry before it reaches the log (a leader
			// handing its group over takes no new entries), so the command
			// surely did not apply.
			return lock.Result{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		default:
			return lock.Result{}, fmt.Errorf("%w: %w", ErrIndeterminate, err)
		}
	}
	ap, ok := f.Response().(applied)
	if !ok {
		return lock.Result{}, fmt.Errorf("%w: unexpected apply response %T", ErrIndeterminate, f.Response())
	}
	n.observeApply(called, returned, ap.times)
	n.traceApply(ctx, span, called, ap.times)
	return ap.res, ap.err
}

// ServeForward applies a command forwarded by another member. It refuses
// with ErrNotLeader unless this node leads, so the sender may retry.
func (n *Node) ServeForward(ctx context.Context, encoded []byte) (_ []byte, err error) {
	defer n.stageSince(StageServeForward, time.Now())
	ctx, span := n.startNodeSpan(ctx, "node.serve_forward", trace.SpanKindServer)
	defer func() { endSpan(span, err) }()
	cmd, err := lock.DecodeCommand(encoded)
	if err != nil {
		return nil, err
	}
	if n.raft.State() != raft.Leader {
		return nil, ErrNotLeader
	}
	res, err := n.applyLocal(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return appendResult(nil, &res), nil
}

// applyGate counts applies in progress and, once closed, admits no more and
// lets the closer wait for the last to leave. It waits on a channel, not a
// lock, so a waiter inside a testing/synctest bubble is durably blocked and
// virtual time can run on to finish the applies it waits for.
type applyGate struct {
	mu     sync.Mutex
	closed bool
	active int
	idle   chan struct{} // closed once closed and no apply is active
}

func (g *applyGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.active++
	return true
}

func (g *applyGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active--; g.closed && g.active == 0 {
		close(g.idle)
	}
}

func (g *applyGate) closeAndWait() {
	g.mu.Lock()
	g.closed = true
	if g.active == 0 {
		close(g.idle)
	}
	g.mu.Unlock()
	<-g.idle
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
