package node

import (
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// boundTimeoutNow wraps a raft transport so that a TimeoutNow RPC (the last
// step of a leadership transfer) waits for its answer at most bound.
// hashicorp/raft (v1.7.2) refuses new entries until that RPC returns, long
// after the transfer itself timed out: with the transport's own timeout
// (5 s in lockd and the simulator), one lost TimeoutNow stalls the group
// for 5 s. Giving up early is safe: the target, if it got the request,
// starts its election anyway and this leader steps down on the new term.
func boundTimeoutNow(t raft.Transport, bound time.Duration) raft.Transport {
	b := boundedTransport{Transport: t, bound: bound}
	if _, ok := t.(raft.WithPreVote); ok {
		return boundedPreVoteTransport{b}
	}
	return b
}

type boundedTransport struct {
	raft.Transport
	bound time.Duration
}

func (t boundedTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	var out raft.TimeoutNowResponse
	// Buffered: the call left behind finishes on its own timeout.
	done := make(chan error, 1)
	go func() { done <- t.Transport.TimeoutNow(id, target, args, &out) }()
	timer := time.NewTimer(t.bound)
	defer timer.Stop()
	select {
	case err := <-done:
		if err == nil {
			*resp = out
		}
		return err
	case <-timer.C:
		return fmt.Errorf("TimeoutNow to %s: no answer within %s", target, t.bound)
	}
}

// Close closes the wrapped transport (raft closes its transport on
// shutdown, and Node.Shutdown closes the configured one).
func (t boundedTransport) Close() error {
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// boundedPreVoteTransport keeps pre-vote on when the wrapped transport has
// it (raft enables pre-vote only on transports that implement it).
type boundedPreVoteTransport struct{ boundedTransport }

func (t boundedPreVoteTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.Transport.(raft.WithPreVote).RequestPreVote(id, target, args, resp)
}
