package node

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

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

// TestApplyPanicIsReported: goal — with OnApplyPanic set, a panic inside the
// state machine is reported with its entry and stack instead of ending the
// process, and the FSM then applies nothing more (its state may be half
// changed) nor snapshots it. Method: an FSM whose state is gone, so applying
// panics, fed two entries.
func TestApplyPanicIsReported(t *testing.T) {
	f, err := newFSM(lock.DefaultConfig(), newNotifier(nil), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var indexes []uint64
	f.onPanic = func(index uint64, v any, stack []byte) {
		indexes = append(indexes, index)
		if !strings.Contains(string(stack), "lock.(*State).Apply") {
			t.Errorf("stack does not show the state machine:\n%s", stack)
		}
	}
	f.state = nil
	tick := lock.AppendCommand(nil, &lock.Command{Op: lock.OpTick})
	out := f.ApplyBatch([]*raft.Log{{Index: 5, Type: raft.LogCommand, Data: tick}, {Index: 6, Type: raft.LogCommand, Data: tick}})
	for i, o := range out {
		if ap, ok := o.(applied); !ok || ap.err == nil {
			t.Errorf("entry %d answered %+v, want an error", 5+i, o)
		}
	}
	if len(indexes) != 1 || indexes[0] != 5 {
		t.Errorf("panics reported at %v, want [5] only", indexes)
	}
	if _, err := f.Snapshot(); err == nil || !errors.Is(err, f.broken) {
		t.Errorf("snapshot of a broken FSM: err %v, want the panic", err)
	}
}
