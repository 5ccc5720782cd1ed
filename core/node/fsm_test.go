package node

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/lock"
)

// TestApplyPanicIsReported: goal — with OnApplyPanic set, a panic inside the
// state machine is reported with its entry and stack instead of ending the
// process, and the FSM then applies nothing more (its state may be half
// changed) nor snapshots it. Method: an FSM whose state is gone, so applying
// panics, fed two entries.
func TestApplyPanicIsReported(t *testing.T) {
	f, err := newFSM(lock.DefaultConfig(), newNotifier(nil), nil)
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
