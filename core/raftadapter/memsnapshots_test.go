package raftadapter

import (
	"io"
	"testing"

	"github.com/hashicorp/raft"
)

func writeSnapshot(t *testing.T, s raft.SnapshotStore, index, term uint64, data string, close bool) raft.SnapshotSink {
	t.Helper()
	sink, err := s.Create(1, index, term, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(sink, data); err != nil {
		t.Fatal(err)
	}
	if close {
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return sink
}

func listed(t *testing.T, s raft.SnapshotStore) []uint64 {
	t.Helper()
	metas, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, m := range metas {
		out = append(out, m.Index)
	}
	return out
}

// TestMemSnapshotsListLikeTheDisk pins the FileSnapshotStore behaviour the
// simulator relies on. raft.InmemSnapshotStore fails the first two cases.
func TestMemSnapshotsListLikeTheDisk(t *testing.T) {
	t.Run("an older snapshot installed later does not shadow a newer one", func(t *testing.T) {
		s := NewMemStores().Snapshot
		writeSnapshot(t, s, 227, 2, "newer", true)
		writeSnapshot(t, s, 207, 2, "older", true)
		if got := listed(t, s); len(got) != 2 || got[0] != 227 || got[1] != 207 {
			t.Fatalf("List = %v, want [227 207]", got)
		}
		meta, rc, err := s.Open(metaID(t, s, 0))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		if meta.Index != 227 || string(b) != "newer" || meta.Size != int64(len("newer")) {
			t.Fatalf("Open(first) = index %d size %d %q", meta.Index, meta.Size, b)
		}
	})
	t.Run("a snapshot is listed only once its sink closes", func(t *testing.T) {
		s := NewMemStores().Snapshot
		writeSnapshot(t, s, 10, 1, "done", true)
		open := writeSnapshot(t, s, 20, 1, "partial", false)
		if got := listed(t, s); len(got) != 1 || got[0] != 10 {
			t.Fatalf("List with an open sink = %v, want [10]", got)
		}
		if err := open.Cancel(); err != nil {
			t.Fatal(err)
		}
		if err := open.Close(); err != nil {
			t.Fatalf("Close after Cancel: %v (idempotent, as on disk)", err)
		}
		if got := listed(t, s); len(got) != 1 || got[0] != 10 {
			t.Fatalf("List after a cancel = %v, want [10]", got)
		}
	})
	t.Run("the newest two are kept, higher term first", func(t *testing.T) {
		s := NewMemStores().Snapshot
		writeSnapshot(t, s, 50, 3, "a", true)
		writeSnapshot(t, s, 60, 3, "b", true)
		writeSnapshot(t, s, 40, 4, "c", true)
		if got := listed(t, s); len(got) != 2 || got[0] != 40 || got[1] != 60 {
			t.Fatalf("List = %v, want [40 60]", got)
		}
		if _, _, err := s.Open("3-50"); err == nil {
			t.Fatal("a reaped snapshot still opens")
		}
	})
}

func metaID(t *testing.T, s raft.SnapshotStore, i int) string {
	t.Helper()
	metas, err := s.List()
	if err != nil || len(metas) <= i {
		t.Fatalf("List = %v, %v", metas, err)
	}
	return metas[i].ID
}
