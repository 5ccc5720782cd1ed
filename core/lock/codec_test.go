package lock

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// anyCommand draws commands over the whole input space, not only valid
// ones: the codec must carry any bytes the proposer wrote.
func anyCommand() *rapid.Generator[Command] {
	return rapid.Custom(func(t *rapid.T) Command {
		var id, owner LeaseID
		copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "lease"))
		copy(owner[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "owner"))
		return Command{
			Op:          Op(rapid.Uint8().Draw(t, "op")),
			Mono:        rapid.Int64().Draw(t, "mono"),
			Resource:    string(rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "resource")),
			ClientID:    rapid.String().Draw(t, "client"),
			RequestID:   rapid.StringN(0, 10, -1).Draw(t, "request"),
			LeaseID:     id,
			Mode:        Mode(rapid.Uint8().Draw(t, "mode")),
			Policy:      Policy(rapid.Uint8().Draw(t, "policy")),
			TTLMs:       rapid.Int64().Draw(t, "ttl"),
			WaitMs:      rapid.Int64().Draw(t, "wait"),
			Owner:       owner,
			Host:        rapid.StringN(0, 8, -1).Draw(t, "host"),
			Incarnation: rapid.Uint64().Draw(t, "incarnation"),
			Suspects:    rapid.SliceOfN(rapid.StringN(0, 4, -1), 0, 3).Draw(t, "suspects"),
			CallerGone:  rapid.Bool().Draw(t, "callerGone"),
			Quota: Quota{Held: rapid.Uint32().Draw(t, "qheld"), Queued: rapid.Uint32().Draw(t, "qqueued"),
				ClientHeld: rapid.Uint32().Draw(t, "qcheld"), ClientQueued: rapid.Uint32().Draw(t, "qcqueued")},
		}
	})
}

// TestCommandRoundTrip encodes random commands, also after a prefix already
// in the buffer, and requires decoding to give them back exactly.
func TestCommandRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cmd := anyCommand().Draw(t, "cmd")
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "prefix")
		buf := AppendCommand(bytes.Clone(prefix), &cmd)
		if !bytes.Equal(buf[:len(prefix)], prefix) {
			t.Fatalf("AppendCommand overwrote the prefix")
		}
		got, err := DecodeCommand(buf[len(prefix):])
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(cmd.Suspects) == 0 {
			cmd.Suspects = nil // decoding gives nil for none
		}
		if !reflect.DeepEqual(got, cmd) {
			t.Fatalf("round trip\n got  %+v\n want %+v", got, cmd)
		}
	})
}

// TestDecodeCommandCorrupt feeds every truncation of valid encodings, a
// trailing byte, a wrong version and an oversized length, and requires
// ErrCorrupt for each.
func TestDecodeCommandCorrupt(t *testing.T) {
	cmds := []Command{
		{},
		acq("resource", 'a', Exclusive, 100, 5),
		as(acq("r", 'b', Shared, 1, 0), "client", "request"),
		{Op: OpTick, Mono: -1 << 62},
	}
	for _, cmd := range cmds {
		enc := AppendCommand(nil, &cmd)
		for n := 0; n < len(enc); n++ {
			if _, err := DecodeCommand(enc[:n]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%v truncated to %d of %d bytes: err %v, want ErrCorrupt", cmd.Op, n, len(enc), err)
			}
		}
		if _, err := DecodeCommand(append(bytes.Clone(enc), 0)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%v with a trailing byte: err %v, want ErrCorrupt", cmd.Op, err)
		}
		wrong := bytes.Clone(enc)
		wrong[0] = commandVersion + 1
		if _, err := DecodeCommand(wrong); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%v with version %d: err %v, want ErrCorrupt", cmd.Op, wrong[0], err)
		}
	}
	// A resource length of 2^63 followed by nothing must not allocate or panic.
	huge := AppendCommand(nil, &Command{})
	huge = huge[:len(huge)-3] // drop the three empty string lengths
	huge = append(huge, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01)
	if _, err := DecodeCommand(huge); !errors.Is(err, ErrCorrupt) {
		t.Errorf("oversized string length: err %v, want ErrCorrupt", err)
	}
}

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
		for _, magic := range []string{snapshotMagic, snapshotMagicV4, snapshotMagicV3, snapshotMagicV2} {
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

// fuzzCommandSeeds are encodings of typical commands.
func fuzzCommandSeeds() [][]byte {
	cmds := []Command{
		acq("orders/42", 'a', Exclusive, 30_000, 0),
		as(acq("r", 'b', Shared, 1, 600_000), "client", "req-1"),
		renew("r", 'a', 0),
		rel("r", 'a'),
		cancel("r", 'b'),
		status("r"),
		{Op: OpTick, Mono: 1 << 40},
	}
	var seeds [][]byte
	for i := range cmds {
		seeds = append(seeds, AppendCommand(nil, &cmds[i]))
	}
	return append(seeds, nil, []byte{commandVersion})
}

// FuzzDecodeCommand requires decoding arbitrary bytes never to panic, to fail
// only with ErrCorrupt, and whatever decodes to survive re-encoding.
func FuzzDecodeCommand(f *testing.F) {
	for _, seed := range fuzzCommandSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, err := DecodeCommand(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := DecodeCommand(AppendCommand(nil, &cmd))
		if err != nil || !reflect.DeepEqual(again, cmd) {
			t.Fatalf("re-encoding %+v gave %+v, %v", cmd, again, err)
		}
	})
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
