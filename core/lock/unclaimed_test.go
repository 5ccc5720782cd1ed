package lock

import (
	"bytes"
	"testing"
)

// TestUnclaimedOfReportsTheGrantingEntry: goal — a grant to a queued
// request remembers the entry (index, term) that made it, across a
// snapshot, so a node that caught up from a snapshot can tell whether its
// earlier process stored it; UnclaimedOf lists only unclaimed grants with
// an attempt of another incarnation of the host. Method: W (n2, process 3)
// queued and granted at index 3 of term 1, V (n2, process 5) at index 5;
// after a snapshot round trip n2's process 5 must see W at (3, 1) only;
// once W is claimed by a renew, nothing. A version 4 snapshot (no index
// nor term) still restores.
func TestUnclaimedOfReportsTheGrantingEntry(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	w := acq("r", 'w', X, 60000, 60000)
	w.Host, w.Incarnation = "n2", 3
	v := acq("s", 'v', X, 60000, 60000)
	v.Host, v.Incarnation = "n2", 5
	applyAt(s, 1, 0, acq("r", 'a', X, 60000, 0))
	applyAt(s, 2, 1, w)
	applyAt(s, 3, 2, Command{Op: OpRelease, Resource: "r", LeaseID: lid('a')})
	applyAt(s, 4, 3, acq("s", 'b', X, 60000, 0))
	applyAt(s, 5, 4, v)
	applyAt(s, 6, 5, Command{Op: OpRelease, Resource: "s", LeaseID: lid('b')})
	restored := mustNew(t, DefaultConfig())
	if err := restored.Restore(s.Snapshot()); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		resource    string
		id          LeaseID
		index, term uint64
	}
	list := func(st *State) []seen {
		var out []seen
		st.UnclaimedOf("n2", 5, func(resource string, id LeaseID, index, term uint64) {
			out = append(out, seen{resource, id, index, term})
		})
		return out
	}
	want := []seen{{"r", lid('w'), 3, 1}}
	for name, st := range map[string]*State{"live": s, "restored": restored} {
		if got := list(st); len(got) != 1 || got[0] != want[0] {
			t.Fatalf("%s: UnclaimedOf = %+v, want %+v", name, got, want)
		}
	}
	applyAt(s, 7, 6, Command{Op: OpRenew, Resource: "r", LeaseID: lid('w')})
	if got := list(s); len(got) != 0 {
		t.Fatalf("after W's renew (claimed): UnclaimedOf = %+v, want none", got)
	}
	// Without unclaimed grants versions 4 and 5 encode alike but the magic.
	applyAt(s, 8, 7, Command{Op: OpRenew, Resource: "s", LeaseID: lid('v')})
	v5 := s.snapshotVersion(5)
	v4 := append([]byte(snapshotMagicV4), v5[len(snapshotMagic):]...)
	restored4 := mustNew(t, DefaultConfig())
	if err := restored4.Restore(v4); err != nil {
		t.Fatalf("restore v4: %v", err)
	}
	if !bytes.Equal(restored4.snapshotVersion(5), v5) {
		t.Fatal("v4 snapshot restored to a different state")
	}
}
