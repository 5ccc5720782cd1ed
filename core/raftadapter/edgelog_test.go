package raftadapter

import (
	"testing"

	"github.com/hashicorp/raft"
)

type monotonicMem struct{ *raft.InmemStore }

func (monotonicMem) IsMonotonic() bool { return true }

func filledLog(t *testing.T, n uint64) *raft.InmemStore {
	t.Helper()
	s := raft.NewInmemStore()
	for i := uint64(1); i <= n; i++ {
		if err := s.StoreLog(&raft.Log{Index: i, Term: 1}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func bounds(t *testing.T, s raft.LogStore) (uint64, uint64) {
	t.Helper()
	first, err := s.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return first, last
}

// Goal: compaction keeps the entry at its edge, so a follower can match a
// leader's AppendEntries whose previous entry is the follower's snapshot
// index; clearing the whole log still clears it. The first and second
// cases fail on an unwrapped store.
func TestKeepCompactionEdge(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		min, max              uint64
		wantFirst, wantLast   uint64
		wantEdgeStillReadable bool
	}{
		{"a prefix keeps its last entry", 1, 10, 10, 20, true},
		{"a one-entry prefix is kept", 1, 1, 1, 20, true},
		{"through the last entry deletes all", 1, 20, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := KeepCompactionEdge(filledLog(t, 20))
			if err := s.DeleteRange(tc.min, tc.max); err != nil {
				t.Fatal(err)
			}
			first, last := bounds(t, s)
			if first != tc.wantFirst || last != tc.wantLast {
				t.Fatalf("after DeleteRange(%d, %d): log %d..%d, want %d..%d", tc.min, tc.max, first, last, tc.wantFirst, tc.wantLast)
			}
			var l raft.Log
			if err := s.GetLog(tc.max, &l); (err == nil) != tc.wantEdgeStillReadable {
				t.Fatalf("GetLog(%d) = %v, want readable %v", tc.max, err, tc.wantEdgeStillReadable)
			}
		})
	}
	t.Run("monotonic passes through", func(t *testing.T) {
		if m, ok := KeepCompactionEdge(monotonicMem{filledLog(t, 1)}).(raft.MonotonicLogStore); !ok || !m.IsMonotonic() {
			t.Fatal("a monotonic store no longer reads as monotonic")
		}
		if KeepCompactionEdge(filledLog(t, 1)).(raft.MonotonicLogStore).IsMonotonic() {
			t.Fatal("an in-memory store reads as monotonic")
		}
	})
}
