package lock

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// frozenAt is a freeze and what the state looked like when it was taken.
type frozenAt struct {
	frozen *Frozen
	want   []byte
	digest uint64
}

func freezeNow(s *State) frozenAt {
	return frozenAt{frozen: s.Freeze(), want: s.Snapshot(), digest: s.Digest()}
}

// check requires the freeze to still encode the state it was taken at, and
// to restore to a state with the same digest.
func (f frozenAt) check(t fataler, cfg Config, what string) {
	got := f.frozen.Snapshot()
	if !bytes.Equal(got, f.want) {
		t.Fatalf("%s: the frozen state changed after the freeze (%d bytes, want %d)", what, len(got), len(f.want))
	}
	restored := mustNew(t, cfg)
	if err := restored.Restore(got); err != nil {
		t.Fatalf("%s: restore: %v", what, err)
	}
	if d := restored.Digest(); d != f.digest {
		t.Fatalf("%s: restored digest %x, want %x", what, d, f.digest)
	}
}

// TestFreezeWhileApplying: goal — a freeze taken between two entries keeps
// encoding the state after the first while later entries are applied, and
// freezing does not change what the live state does. Method: apply a
// random log to a state, freezing it at up to three random points, and to a
// twin that is never frozen; each freeze must encode (and restore to) the
// state at its point, and both states must give the same results, events
// and final snapshot.
func TestFreezeWhileApplying(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := propConfig()
		log := drawLog(t)
		defer func() { logOnFailure(t, log) }() // log as it is at the failure, not as it was here
		var cuts []int
		for i := rapid.IntRange(1, 3).Draw(t, "freezes"); i > 0; i-- {
			cuts = append(cuts, rapid.IntRange(0, len(log)).Draw(t, "freezeAt"))
		}
		slices.Sort(cuts)
		s, twin := mustNew(t, cfg), mustNew(t, cfg)
		var frozen []frozenAt
		for i := 0; i <= len(log); i++ {
			for len(cuts) > 0 && cuts[0] == i {
				cuts = cuts[1:]
				frozen = append(frozen, freezeNow(s))
			}
			if i == len(log) {
				break
			}
			res, events := s.Apply(log[i])
			events = copyEvents(events)
			twinRes, twinEvents := twin.Apply(log[i])
			if !reflect.DeepEqual(res, twinRes) || !sameEvents(events, copyEvents(twinEvents)) {
				t.Fatalf("%s\n frozen state: %s %+v\n twin:         %s %+v", entryText(log[i]), resultText(res), events, resultText(twinRes), twinEvents)
			}
		}
		if !bytes.Equal(s.Snapshot(), twin.Snapshot()) {
			t.Fatal("freezing changed the live state's final snapshot")
		}
		for i, f := range frozen {
			f.check(t, cfg, fmt.Sprintf("freeze %d", i))
		}
	})
}

// manyChunkID makes lease id i for TestFreezeAcrossChunks.
func manyChunkID(i int) LeaseID {
	var id LeaseID
	id[0] = 0xC0
	binary.BigEndian.PutUint64(id[8:], uint64(i))
	return id
}

// TestFreezeAcrossChunks: goal — the arena's copy-on-write keeps a freeze
// intact across every kind of edit of a record that a frozen copy shares:
// an inline holder renewed or released, a queue granted from, cancelled
// from and appended to, a shared holder added, a slot freed and reused,
// a new chunk. Method: 1,000 locks (4 chunks) with queues and shared
// holders in different chunks, a freeze, then each edit; the freeze must
// still encode the state it was taken at, and the live state must end as
// a never-frozen twin given the same entries; also with CopyBack (which a
// snapshot's writer runs between applies) copying chunks back in steps of
// 1, 3 and all of them.
func TestFreezeAcrossChunks(t *testing.T) {
	for _, copyBack := range []int{0, 1, 3, 100} {
		t.Run(fmt.Sprintf("copyBack=%d", copyBack), func(t *testing.T) { freezeAcrossChunks(t, copyBack) })
	}
}

// freezeAcrossChunks: with copyBack > 0, CopyBack(copyBack) runs after the
// freeze and after every tenth edit, as a snapshot's writer would between
// applies.
func freezeAcrossChunks(t *testing.T, copyBack int) {
	cfg := DefaultConfig()
	var log []Command
	add := func(c Command) { log = append(log, c) }
	name := func(i int) string { return fmt.Sprintf("res-%04d", i) }
	ex := func(res string, id int, waitMs int64) Command {
		// Waiters are clients of their own, so no wait-for cycle refuses one.
		client := fmt.Sprintf("c%d", id%7)
		if waitMs > 0 {
			client = fmt.Sprintf("w%d", id)
		}
		return Command{Op: OpAcquire, Resource: res, ClientID: client, LeaseID: manyChunkID(id),
			Mode: Exclusive, TTLMs: 60_000, WaitMs: waitMs}
	}
	for i := 0; i < 1000; i++ {
		add(ex(name(i), i, 0))
	}
	// Queues in chunks 0, 1 and 3; shared holders in chunk 2.
	for _, r := range []int{5, 300, 900} {
		for w := 1; w <= 3; w++ {
			add(ex(name(r), 10_000*w+r, 30_000))
		}
	}
	for h := 0; h < 3; h++ {
		add(Command{Op: OpAcquire, Resource: "shared-x", ClientID: "s", LeaseID: manyChunkID(20_000 + h), Mode: Shared, TTLMs: 60_000})
	}
	before := len(log)
	add(Command{Op: OpRelease, Resource: name(5), LeaseID: manyChunkID(5)})                  // grant the queue head
	add(Command{Op: OpCancel, Resource: name(300), LeaseID: manyChunkID(20_300)})            // drop a middle waiter
	add(ex(name(900), 40_900, 30_000))                                                       // join a queue
	add(Command{Op: OpRenew, Resource: name(600), LeaseID: manyChunkID(600), TTLMs: 90_000}) // edit a holder in place
	add(Command{Op: OpAcquire, Resource: "shared-x", ClientID: "s", LeaseID: manyChunkID(20_003), Mode: Shared, TTLMs: 60_000})
	add(Command{Op: OpRelease, Resource: "shared-x", LeaseID: manyChunkID(20_000)})
	for i := 10; i < 200; i++ {
		add(Command{Op: OpRelease, Resource: name(i), LeaseID: manyChunkID(i)})
	}
	for i := 1000; i < 1400; i++ { // reuses the freed slots, then opens a new chunk
		add(ex(name(i), i, 0))
	}

	s, twin := mustNew(t, cfg), mustNew(t, cfg)
	var frozen frozenAt
	for i, c := range log {
		if i == before {
			frozen = freezeNow(s)
		}
		if copyBack > 0 && i >= before && (i-before)%10 == 0 {
			s.CopyBack(copyBack)
		}
		c.Mono = int64(i) * int64(time.Millisecond)
		e := Entry{Index: uint64(i) + 1, Term: 1, Command: c}
		res, _ := s.Apply(e)
		if twinRes, _ := twin.Apply(e); !reflect.DeepEqual(res, twinRes) {
			t.Fatalf("entry %d: %+v, twin %+v", i+1, res, twinRes)
		}
		if res.Code != OK {
			t.Fatalf("entry %d (%v %s): %v", i+1, c.Op, c.Resource, res.Code)
		}
	}
	if copyBack == 100 && s.CopyBack(1) {
		t.Error("CopyBack still reports shared chunks after copying them all")
	}
	frozen.check(t, cfg, "after the edits")
	if !bytes.Equal(s.Snapshot(), twin.Snapshot()) {
		t.Fatal("freezing changed the live state's final snapshot")
	}
	if got := frozen.frozen.Index(); got != uint64(before) {
		t.Fatalf("Index %d, want %d", got, before)
	}
}
