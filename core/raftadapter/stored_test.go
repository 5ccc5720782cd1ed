package raftadapter

import (
	"testing"

	"github.com/hashicorp/raft"
)

// TestStoredLogTellsEntriesByTerm: goal — a restarted process counts as
// stored only the entries its stores held, told apart by term: an index its
// dead process had filled with an entry of its own (uncommitted) term, later
// overwritten by the next leader, does not count, so a grant made there is
// released as an orphan. Method: a log of terms 1 (1-10), 2 (11-14), 4
// (15-16) after a snapshot at 3, asked about indexes and terms around it.
func TestStoredLogTellsEntriesByTerm(t *testing.T) {
	st := NewMemStores()
	var logs []*raft.Log
	for i := uint64(1); i <= 16; i++ {
		term := uint64(1)
		switch {
		case i >= 15:
			term = 4
		case i >= 11:
			term = 2
		}
		logs = append(logs, &raft.Log{Index: i, Term: term, Type: raft.LogCommand})
	}
	if err := st.Log.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	sink, err := st.Snapshot.Create(raft.SnapshotVersionMax, 3, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := ReadStoredLog(st)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		index, term uint64
		want        bool
	}{
		{2, 7, true}, // under the snapshot: committed, whatever the term
		{4, 1, true}, {10, 1, true}, {10, 2, false},
		{11, 2, true}, {14, 2, true}, {14, 3, false}, // the next leader's entry at 14
		{15, 4, true}, {16, 4, true}, {16, 5, false},
		{17, 4, false}, // past the stored log
	}
	for _, c := range cases {
		if got := s.Holds(c.index, c.term); got != c.want {
			t.Errorf("Holds(%d, term %d) = %v, want %v (runs %+v)", c.index, c.term, got, c.want, s.runs)
		}
	}
	empty, err := ReadStoredLog(NewMemStores())
	if err != nil {
		t.Fatal(err)
	}
	if !empty.Holds(5, 1) {
		t.Error("an empty disk must count every entry as stored (nothing says what was delivered)")
	}
}
