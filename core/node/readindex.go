package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/lock"
)

// ReadIndex is a group leader's answer to a read-index query: a point in
// the log at or after every entry committed before the query.
//
// A replica cannot judge how far behind it is from its own indexes: after
// a restart hashicorp/raft knows the leader from the first heartbeat, but
// heartbeats carry no commit index, so the replica's commit index stays at
// what it had (0 after a restart) and its state machine holds only its
// snapshot until an AppendEntries with the leader's commit index arrives.
// It has to ask.
type ReadIndex struct {
	// Commit is the leader's commit index.
	Commit uint64 `json:"commit"`
	// Command is the index of the last command entry at or before Commit
	// (0: none). A replica whose state machine applied it holds every lock
	// change committed before the query: the entries after it up to Commit
	// change no lock (no-ops, configurations), and raft does not hand the
	// no-ops to the state machine, so the state machine's own position is
	// compared with this, not with Commit.
	Command uint64 `json:"command"`
}

// ReadIndexer is a Forwarder that can also ask a group's leader for its
// read index. Optional, found by type assertion: a node whose forwarder
// lacks it catches up only while it leads.
type ReadIndexer interface {
	// ReadIndex returns leader's read index; an error wrapping ErrNotLeader
	// when leader does not lead, ErrUnavailable when it cannot answer yet.
	ReadIndex(ctx context.Context, leader Peer) (ReadIndex, error)
}

// maxReadIndexScan bounds the entries a leader reads back from its commit
// index to find the last command. Normally it reads one or two: the
// commit index is a command or the leader's own no-op right after one.
const maxReadIndexScan = 1024

// catchUpPoll is how often CatchUp looks at the state machine while it
// waits for it to reach the read index.
const catchUpPoll = 5 * time.Millisecond

// ServeReadIndex answers a read-index query on the leader. It refuses with
// ErrNotLeader unless this node leads and confirms it with a heartbeat
// round (raft's VerifyLeader), so a deposed leader that has not noticed
// cannot answer with an old index (one that cannot reach a quorum steps
// down within its leader lease, which bounds the wait); and with
// ErrUnavailable while its commit index is a previous term's (a new
// leader knows what is committed only once an entry of its own term is).
func (n *Node) ServeReadIndex() (ReadIndex, error) {
	if n.raft.State() != raft.Leader {
		return ReadIndex{}, ErrNotLeader
	}
	term, commit := n.raft.CurrentTerm(), n.raft.CommitIndex()
	command, err := n.lastCommand(commit, term)
	if err != nil {
		return ReadIndex{}, err
	}
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return ReadIndex{}, fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	if n.raft.CurrentTerm() != term {
		return ReadIndex{}, fmt.Errorf("%w: term changed from %d while answering", ErrNotLeader, term)
	}
	return ReadIndex{Commit: commit, Command: command}, nil
}

// lastCommand returns the index of the last command entry at or before
// commit, which must hold an entry of term.
func (n *Node) lastCommand(commit, term uint64) (uint64, error) {
	var l raft.Log
	for i := commit; i > 0; i-- {
		if commit-i >= maxReadIndexScan {
			return 0, fmt.Errorf("%w: no command entry in the %d entries up to commit index %d",
				ErrUnavailable, maxReadIndexScan, commit)
		}
		err := n.cfg.Stores.Log.GetLog(i, &l)
		if errors.Is(err, raft.ErrLogNotFound) && i < commit {
			// Compacted: a snapshot of this state machine covers it, so
			// the state machine applied every command up to there, and
			// it applies committed entries only. Its last command is the
			// one wanted or a later committed one: a safe read index.
			return n.appliedCommand(), nil
		}
		if err != nil {
			return 0, fmt.Errorf("%w: read log entry %d: %w", ErrUnavailable, i, err)
		}
		if i == commit && l.Term != term {
			return 0, fmt.Errorf("%w: the leader has not committed an entry of its term %d yet", ErrUnavailable, term)
		}
		if l.Type == raft.LogCommand {
			return i, nil
		}
	}
	return 0, nil
}

// appliedCommand is the index of the last command entry this node's state
// machine applied (or restored from a snapshot).
func (n *Node) appliedCommand() uint64 {
	var i uint64
	n.fsm.read(func(s *lock.State) { i = s.Metrics().LastIndex })
	return i
}

// ReadIndex returns the group leader's read index: this node's own when it
// leads, else the leader's, asked through the forwarder.
func (n *Node) ReadIndex(ctx context.Context) (ReadIndex, error) {
	if n.raft.State() == raft.Leader {
		return n.ServeReadIndex()
	}
	leader, ok := n.Leader()
	if !ok || leader.ID == n.cfg.ID {
		return ReadIndex{}, fmt.Errorf("%w: no leader known", ErrUnavailable)
	}
	ri, ok := n.cfg.Forwarder.(ReadIndexer)
	if !ok {
		return ReadIndex{}, fmt.Errorf("%w: this member cannot ask the leader for its read index", ErrUnavailable)
	}
	return ri.ReadIndex(ctx, leader)
}

// CatchUp asks for the leader's read index and waits, until ctx ends, for
// this replica's state machine to apply up to it (else it returns ctx's
// error, saying how far it got). Once it succeeds, CaughtUp reports true
// for the rest of this process. It returns the read index it waited for.
func (n *Node) CatchUp(ctx context.Context) (ReadIndex, error) {
	ri, err := n.ReadIndex(ctx)
	if err != nil {
		return ri, fmt.Errorf("read index: %w", err)
	}
	t := time.NewTicker(catchUpPoll)
	defer t.Stop()
	for {
		applied := n.appliedCommand()
		if applied >= ri.Command {
			n.caughtUp.Store(true)
			return ri, nil
		}
		select {
		case <-ctx.Done():
			return ri, fmt.Errorf("applied %d < leader's %d (its last command at or before commit index %d): %w",
				applied, ri.Command, ri.Commit, ctx.Err())
		case <-n.done:
			return ri, ErrShutdown
		case <-t.C:
		}
	}
}

// CaughtUp reports whether this replica's state machine has, since this
// process started, applied up to a read index its leader gave after the
// start (CatchUp). Until then its local state may be an old snapshot that
// looks real.
func (n *Node) CaughtUp() bool { return n.caughtUp.Load() }
