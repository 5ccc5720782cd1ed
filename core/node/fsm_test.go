package node

import (
	"bytes"
	"io"
	"testing"

	"github.com/lockstep/lockstep/core/lock"
)

// bufferSink is a raft.SnapshotSink into memory.
type bufferSink struct{ bytes.Buffer }

func (s *bufferSink) Close() error  { return nil }
func (s *bufferSink) Cancel() error { return nil }
func (s *bufferSink) ID() string    { return "buffer" }

// TestSnapshotPersistedAfterMoreApplies: goal — raft persists a snapshot
// after the FSM has gone on applying (Snapshot only freezes; Persist
// encodes later), and what it writes is the state at the snapshot's index.
// Method: 3,000 locks (12 arena chunks), a snapshot, then renews and
// releases across all of them and new locks; the persisted bytes must
// restore to the digest and last index seen when the snapshot was taken.
func TestSnapshotPersistedAfterMoreApplies(t *testing.T) {
	f, err := newFSM(lock.DefaultConfig(), newNotifier(nil), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	fillFSM(t, f, n)
	var wantDigest uint64
	var wantIndex uint64
	f.read(func(st *lock.State) { wantDigest, wantIndex = st.Digest(), st.Metrics().LastIndex })
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	next := uint64(n) + 1
	for range 3 {
		batch := renewBatch(n, next)
		next += uint64(len(batch))
		f.ApplyBatch(batch)
	}
	var after uint64
	f.read(func(st *lock.State) { after = st.Digest() })
	if after == wantDigest {
		t.Fatal("the applies after the snapshot changed nothing; the test would prove nothing")
	}
	var sink bufferSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	restored, err := newFSM(lock.DefaultConfig(), newNotifier(nil), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := restored.Restore(io.NopCloser(&sink)); err != nil {
		t.Fatal(err)
	}
	restored.read(func(st *lock.State) {
		if d, i := st.Digest(), st.Metrics().LastIndex; d != wantDigest || i != wantIndex {
			t.Fatalf("restored digest %x at index %d, want %x at %d", d, i, wantDigest, wantIndex)
		}
	})
}
