package raftadapter

import (
	"time"

	"github.com/hashicorp/raft"
)

// GroupTransport wraps a Raft group's transport with lockstep's two
// corrections to how hashicorp/raft v1.7.2 drives its RPCs: a TimeoutNow
// that waits at most bound (timeoutnow.go; 0 leaves it alone) and an
// AppendEntries that a follower rejecting for a compacted previous entry
// gets again anchored at its last entry (anchor.go). Lock groups and the
// metadata group both use it.
func GroupTransport(t raft.Transport, bound time.Duration) raft.Transport {
	g := groupTransport{Transport: t, bound: bound}
	if _, ok := t.(raft.WithPreVote); ok {
		return preVoteGroupTransport{g}
	}
	return g
}

var (
	_ raft.WithClose   = (*groupTransport)(nil)
	_ raft.WithPreVote = (*preVoteGroupTransport)(nil)
)

type groupTransport struct {
	raft.Transport
	bound time.Duration
}

// Close closes the wrapped transport (raft closes its transport on
// shutdown, and core/node's Shutdown closes the configured one).
func (t groupTransport) Close() error {
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// preVoteGroupTransport keeps pre-vote on when the wrapped transport has
// it (raft enables pre-vote only on transports that implement it).
type preVoteGroupTransport struct{ groupTransport }

func (t preVoteGroupTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.Transport.(raft.WithPreVote).RequestPreVote(id, target, args, resp)
}
