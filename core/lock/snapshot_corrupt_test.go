package lock

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"
)

// snapshotSeeds returns snapshots of a few states with holders, shared
// holders, queues and dedupe entries, for corruption tests and fuzz seeds.
func snapshotSeeds(t testing.TB) [][]byte {
	empty := mustNew(t, DefaultConfig())
	busy := mustNew(t, DefaultConfig())
	script := []Command{
		as(acq("r", 'a', Shared, 100, 0), "c1", "q1"),
		acq("r", 'b', Shared, 200, 0),
		as(acq("r", 'c', Exclusive, 100, 500), "c2", "q2"),
		acq("r", 'd', Shared, 100, 500),
		acq("s\x00t", 'e', Exclusive, 50, 0),
	}
	for i, c := range script {
		c.Mono = int64(i) * int64(time.Millisecond)
		busy.Apply(Entry{Index: uint64(i + 1), Term: 3, Command: c})
	}
	return [][]byte{empty.Snapshot(), busy.Snapshot()}
}

// TestRestoreCorrupt feeds every truncation of real snapshots, a trailing
// byte and a bad magic, and requires ErrCorrupt and an untouched state.
func TestRestoreCorrupt(t *testing.T) {
	for _, snap := range snapshotSeeds(t) {
		s := mustNew(t, DefaultConfig())
		s.Apply(Entry{Index: 1, Term: 1, Command: acq("keep", 'k', Exclusive, 100, 0)})
		before := s.Snapshot()
		check := func(what string, b []byte) {
			t.Helper()
			if err := s.Restore(b); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: err %v, want ErrCorrupt", what, err)
			}
			if !bytes.Equal(s.Snapshot(), before) {
				t.Fatalf("%s: failed restore changed the state", what)
			}
		}
		for n := 0; n < len(snap); n++ {
			check("truncated", snap[:n])
		}
		check("trailing byte", append(bytes.Clone(snap), 0))
		bad := bytes.Clone(snap)
		bad[0] ^= 0xFF
		check("bad magic", bad)
	}
}

// TestSnapshotIndex: goal — the header peek a replica uses to refuse an
// older snapshot reads the same index a restore would, for every version's
// magic, and calls a truncated header or foreign bytes corrupt.
func TestSnapshotIndex(t *testing.T) {
	for _, snap := range snapshotSeeds(t) {
		s := mustNew(t, DefaultConfig())
		if err := s.Restore(snap); err != nil {
			t.Fatal(err)
		}
		want := s.Metrics().LastIndex
		for _, magic := range []string{snapshotMagic, snapshotMagicV5, snapshotMagicV4, snapshotMagicV3, snapshotMagicV2} {
			b := append([]byte(magic), snap[len(snapshotMagic):]...)
			if got, err := SnapshotIndex(b); err != nil || got != want {
				t.Errorf("%q: SnapshotIndex = %d, %v; want %d", magic, got, err, want)
			}
		}
		for n := range len(snapshotMagic) + 2 {
			if _, err := SnapshotIndex(snap[:n]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("first %d bytes: err %v, want ErrCorrupt", n, err)
			}
		}
	}
	s := mustNew(t, DefaultConfig())
	for i := uint64(1); i <= 300; i++ {
		s.Apply(Entry{Index: i, Term: 1, Command: acq("r", 'a', Exclusive, 100, 0)})
	}
	if got, err := SnapshotIndex(s.Snapshot()); err != nil || got != 300 {
		t.Errorf("after 300 entries: SnapshotIndex = %d, %v; want 300", got, err)
	}
}

// TestRestoreRejectsBrokenInvariants snapshots states whose holders or
// waiters were broken in memory and requires Restore to refuse them, since
// Apply would panic on them later (found by FuzzRestore).
func TestRestoreRejectsBrokenInvariants(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(s *State, r *resource)
	}{
		{"token above the last issued", func(s *State, r *resource) { r.more.shared[0].token = s.lastToken + 1 }},
		{"token zero", func(s *State, r *resource) { r.more.shared[0].token = 0 }},
		{"exclusive among shared", func(s *State, r *resource) { r.first.clientMode = makeClientMode(r.first.client(), Exclusive) }},
		{"exclusive after shared", func(s *State, r *resource) {
			r.more.shared[0].clientMode = makeClientMode(r.more.shared[0].client(), Exclusive)
		}},
		{"holder mode 3", func(s *State, r *resource) { r.first.clientMode = makeClientMode(r.first.client(), 3) }},
		{"waiter mode 0", func(s *State, r *resource) { r.more.queue[0].mode = 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, DefaultConfig())
			for i, c := range []Command{
				acq("r", 'a', Shared, 100, 0),
				acq("r", 'b', Shared, 100, 0),
				acq("r", 'c', Exclusive, 100, 500),
			} {
				s.Apply(Entry{Index: uint64(i + 1), Term: 1, Command: c})
			}
			tc.corrupt(s, s.resources.find("r"))
			if err := mustNew(t, DefaultConfig()).Restore(s.Snapshot()); !errors.Is(err, ErrCorrupt) {
				t.Errorf("restore: err %v, want ErrCorrupt", err)
			}
		})
	}
}

// FuzzRestore requires restoring arbitrary bytes never to panic, to leave
// the state untouched on error, and an accepted snapshot to give a state
// that snapshots canonically and keeps applying commands without panicking.
func FuzzRestore(f *testing.F) {
	for _, seed := range snapshotSeeds(f) {
		f.Add(seed)
	}
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := mustNew(t, DefaultConfig())
		before := s.Snapshot()
		if err := s.Restore(b); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			if !bytes.Equal(s.Snapshot(), before) {
				t.Fatalf("failed restore changed the state")
			}
			return
		}
		checkSnapshotRoundTrip(t, s)
		// Touch every restored resource, then let everything expire.
		_, term, mono := s.ClockReading()
		index := s.Metrics().LastIndex
		var names []string
		for r := range s.resources.all() {
			names = append(names, r.name)
		}
		slices.Sort(names)
		for _, name := range names {
			index++
			s.Apply(Entry{Index: index, Term: term, Command: acq(name, 'z', Shared, 1, 0)})
			for _, h := range s.Status(name).Holders {
				index++
				s.Apply(Entry{Index: index, Term: term, Command: Command{Op: OpRenew, Resource: name, LeaseID: h.ID}})
			}
		}
		s.Apply(Entry{Index: index + 1, Term: term, Command: Command{Op: OpTick, Mono: mono + int64(365*24*time.Hour)}})
	})
}
