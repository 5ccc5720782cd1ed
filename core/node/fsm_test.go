package node

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/codec"
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
	tick := codec.AppendCommand(nil, &lock.Command{Op: lock.OpTick})
	out := f.ApplyBatch([]*raft.Log{{Index: 5, Type: raft.LogCommand, Data: tick}, {Index: 6, Type: raft.LogCommand, Data: tick}})
	for i, o := range out {
		if ap, ok := o.([]applied); !ok || len(ap) != 1 || ap[0].err == nil {
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

// TestRestoreRefusesAnOlderSnapshot: goal — a replica refuses a snapshot
// older than its state and keeps that state (a leader's older snapshot
// rewound a follower over a compacted log: networkPartition seed 20),
// while an equal or newer snapshot restores. Method: snapshots of one FSM
// at two indexes, restored into FSMs at, before and past them.
func TestRestoreRefusesAnOlderSnapshot(t *testing.T) {
	newAt := func(n int) *fsm {
		f, err := newFSM(lock.DefaultConfig(), newNotifier(nil), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		fillFSM(t, f, n)
		return f
	}
	snapAt := func(n int) []byte {
		var sink bufferSink
		s, err := newAt(n).Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Persist(&sink); err != nil {
			t.Fatal(err)
		}
		return sink.Bytes()
	}
	state := func(f *fsm) (digest, index uint64) {
		f.read(func(st *lock.State) { digest, index = st.Digest(), st.Metrics().LastIndex })
		return digest, index
	}
	small, big := snapAt(20), snapAt(40)
	for _, c := range []struct {
		name   string
		have   int
		snap   []byte
		refuse bool
	}{
		{"older", 40, small, true},
		{"equal", 40, big, false},
		{"newer", 20, big, false},
		{"fresh replica", 0, small, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newAt(c.have)
			d0, i0 := state(f)
			err := f.Restore(io.NopCloser(bytes.NewReader(c.snap)))
			d1, i1 := state(f)
			if c.refuse {
				if !errors.Is(err, errOlderSnapshot) || d1 != d0 || i1 != i0 {
					t.Fatalf("err %v, state %x@%d -> %x@%d; want a refusal and the state kept", err, d0, i0, d1, i1)
				}
				return
			}
			want := newAt(0)
			if err := want.Restore(io.NopCloser(bytes.NewReader(c.snap))); err != nil {
				t.Fatal(err)
			}
			if dw, iw := state(want); err != nil || d1 != dw || i1 != iw {
				t.Fatalf("err %v, state %x@%d; want the snapshot's %x@%d", err, d1, i1, dw, iw)
			}
		})
	}
}
