package scenarios

import (
	"testing"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/raftadapter"
)

// TestStoredTailKept: goal — Restart.Kept says up to where a dead
// process's stores held the committed log, so an entry of its own at an
// index the next leader filled differently does not count as stored.
// Method: stores with entries 1-6 where the process applied 3; 4 and 5 were
// committed as stored, 6 was overwritten by another entry (and 7 is a
// no-op); kept must be 5, and 6 once 6 matches too. Wiped (empty) stores
// keep nothing.
func TestStoredTailKept(t *testing.T) {
	st := raftadapter.NewMemStores()
	data := func(i uint64) []byte { return []byte{byte(i), 'x'} }
	var logs []*raft.Log
	for i := uint64(1); i <= 6; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: data(i)})
	}
	logs = append(logs, &raft.Log{Index: 7, Term: 1, Type: raft.LogNoop})
	if err := st.Log.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	tail := readStoredTail(st, 3)
	if tail.last != 7 {
		t.Fatalf("last = %d, want 7", tail.last)
	}
	committed := map[uint64][]byte{1: data(1), 2: data(2), 3: data(3), 4: data(4), 5: data(5), 6: []byte("other")}
	at := func(i uint64) (uint64, bool) {
		d, ok := committed[i]
		return fnv64(d), ok
	}
	if k := tail.kept(at); k != 5 {
		t.Fatalf("kept = %d, want 5 (6 was overwritten)", k)
	}
	committed[6] = data(6)
	if k := tail.kept(at); k != 6 {
		t.Fatalf("kept = %d, want 6", k)
	}
	if wiped := readStoredTail(raftadapter.NewMemStores(), 3); wiped.kept(at) != 0 || wiped.last != 0 {
		t.Fatalf("wiped stores: %+v, want nothing kept", wiped)
	}
}
