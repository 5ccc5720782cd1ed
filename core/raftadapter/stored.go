package raftadapter

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// StoredLog is what a process found in its stores when it started: which
// entries its node's earlier process had stored before it ended. An index
// alone does not say it: a leader that died may have stored entries of its
// own term that the next leader overwrote, so the same index later holds
// another entry, one the earlier process never saw. Terms tell them apart
// (two logs holding the same index and term hold the same entry), and
// along a log they never decrease, so runs of equal terms describe it.
type StoredLog struct {
	// empty: the stores held nothing (a new or wiped disk). Nothing says
	// what an earlier process stored, so every entry counts as stored.
	empty bool
	// snapshot is the highest index a snapshot covers: committed entries.
	snapshot uint64
	// runs are the log's entries past the snapshot, grouped by term.
	runs []termRun
	last uint64
}

// termRun is a stretch of log from first to the next run's first - 1 (or
// the log's last index), every entry of term term.
type termRun struct{ first, term uint64 }

// ReadStoredLog reads st before Raft starts on it. It costs a binary search
// per term in the log, not a read per entry.
func ReadStoredLog(st Stores) (StoredLog, error) {
	var s StoredLog
	snaps, err := st.Snapshot.List()
	if err != nil {
		return s, fmt.Errorf("list snapshots: %w", err)
	}
	for _, m := range snaps {
		s.snapshot = max(s.snapshot, m.Index)
	}
	first, err := st.Log.FirstIndex()
	if err != nil {
		return s, fmt.Errorf("read first log index: %w", err)
	}
	last, err := st.Log.LastIndex()
	if err != nil {
		return s, fmt.Errorf("read last log index: %w", err)
	}
	if last == 0 && s.snapshot == 0 {
		return StoredLog{empty: true}, nil
	}
	first = max(first, s.snapshot+1)
	s.last = last
	term := func(i uint64) (uint64, error) {
		var l raft.Log
		if err := st.Log.GetLog(i, &l); err != nil {
			return 0, fmt.Errorf("read log entry %d: %w", i, err)
		}
		return l.Term, nil
	}
	for i := first; i <= last; {
		t, err := term(i)
		if err != nil {
			return s, err
		}
		s.runs = append(s.runs, termRun{first: i, term: t})
		// The run's end: the last index in [i, last] whose term is still t.
		lo, hi := i, last
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			mt, err := term(mid)
			if err != nil {
				return s, err
			}
			if mt == t {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		i = lo + 1
	}
	return s, nil
}

// Holds reports whether the entry at (index, term) was in the stores.
func (s StoredLog) Holds(index, term uint64) bool {
	switch {
	case s.empty || index <= s.snapshot:
		return true
	case index > s.last || len(s.runs) == 0 || index < s.runs[0].first:
		return false
	}
	t := s.runs[0].term
	for _, r := range s.runs[1:] {
		if r.first > index {
			break
		}
		t = r.term
	}
	return t == term
}
