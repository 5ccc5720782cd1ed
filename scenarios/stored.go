package scenarios

import (
	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/raftadapter"
)

// storedTail is what an ended node process left in its stores past what it
// applied, read when its next process starts (a kill keeps the disk, so
// that is also what it had stored when it died). Entries it applied or a
// snapshot covers are committed; the tail's commands may be committed ones
// or its own uncommitted entries that the next leader overwrote, which only
// the committed log, known at the end of the run, tells apart.
type storedTail struct {
	// base is the highest index surely holding the committed entry: the
	// last applied, or a snapshot's.
	base uint64
	// last is the last index the stores held.
	last uint64
	// commands hashes the command entries in (base, last] by index.
	commands map[uint64]uint64
}

// readStoredTail reads st, whose process applied up to applied. Empty
// stores (a wiped disk) hold nothing, whatever the process applied.
func readStoredTail(st raftadapter.Stores, applied uint64) storedTail {
	var snapshot uint64
	if snaps, err := st.Snapshot.List(); err == nil {
		for _, m := range snaps {
			snapshot = max(snapshot, m.Index)
		}
	}
	last, err := st.Log.LastIndex()
	if err != nil || (last == 0 && snapshot == 0) {
		return storedTail{}
	}
	t := storedTail{base: max(applied, snapshot), commands: map[uint64]uint64{}}
	t.last = max(last, t.base)
	for i := t.base + 1; i <= last; i++ {
		var l raft.Log
		if st.Log.GetLog(i, &l) == nil && l.Type == raft.LogCommand {
			t.commands[i] = fnv64(l.Data)
		}
	}
	return t
}

// kept is the highest index up to which the stores held the committed
// log; committed gives the hash of the command committed at an index. Two
// logs holding the same entry at an index agree on everything before it,
// so the highest match is enough. A command entry carries its leader's
// clock reading in nanoseconds, so two different entries hashing alike at
// one index is not a practical concern.
func (t storedTail) kept(committed func(index uint64) (uint64, bool)) uint64 {
	k := t.base
	for i, h := range t.commands {
		if c, ok := committed(i); ok && c == h {
			k = max(k, i)
		}
	}
	return k
}
