package raftadapter

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// KeepCompactionEdge wraps a group's log store so that compacting a prefix
// keeps the prefix's last entry (normally the snapshot's index).
//
// hashicorp/raft v1.7.2 checks an AppendEntries' previous entry by reading
// it from the log unless it is the follower's last entry, not by its
// snapshot. A follower that compacted through its snapshot index, holding
// more uncommitted entries than TrailingLogs after it, rejects a leader
// whose log ends at that index; the leader walks back, sends its own
// snapshot even when it is older than the follower's state, and the
// follower rewinds its state machine over a log with a hole (raft panics
// "log not found" applying it, or, on a monotonic store, never matches
// again). Seen in the simulator, whose groups keep 16 trailing entries.
// Keeping the edge entry lets the follower match there. Deleting through
// the last entry (raft clearing the log after installing a snapshot) still
// deletes everything.
func KeepCompactionEdge(s raft.LogStore) raft.LogStore { return edgeLog{s} }

var _ raft.MonotonicLogStore = (*edgeLog)(nil)

type edgeLog struct{ raft.LogStore }

func (s edgeLog) DeleteRange(min, max uint64) error {
	last, err := s.LastIndex()
	if err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if max < last {
		if max <= min {
			return nil
		}
		max--
	}
	return s.LogStore.DeleteRange(min, max)
}

// IsMonotonic passes the wrapped store's answer on, so raft still clears
// a monotonic log after a snapshot install.
func (s edgeLog) IsMonotonic() bool {
	m, ok := s.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
