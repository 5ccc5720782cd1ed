package lock

// Tests for gaps that mutation testing (gremlins, make mutate) found: each
// pins a property whose breaking no other test of this package noticed.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// checkCounters recounts what State keeps as running counts (leases,
// waiters, queued requests per host, client reference counts) from the
// resources themselves.
func checkCounters(t fataler, s *State, after string) {
	t.Helper()
	leases, waiters := 0, 0
	byHost := map[string]int{}
	refs := map[uint32]uint32{}
	for r := range s.resources.all() {
		for i := 0; i < r.holderCount(); i++ {
			leases++
			refs[r.holderAt(i).client()]++
		}
		for _, w := range r.queue() {
			waiters++
			for _, a := range w.attempts {
				byHost[a.host]++
			}
			refs[w.client]++
		}
	}
	if s.leases != leases || s.waiters != waiters {
		t.Fatalf("after %s: counts %d leases, %d waiters; recount %d, %d", after, s.leases, s.waiters, leases, waiters)
	}
	// A host's count may linger at zero (a retry moved its request to
	// another host), so only non-zero counts must match.
	for h, n := range s.queuedByHost {
		if n != byHost[h] {
			t.Fatalf("after %s: queuedByHost[%q] = %d, recount %d", after, h, n, byHost[h])
		}
	}
	for h, n := range byHost {
		if s.queuedByHost[h] != n {
			t.Fatalf("after %s: queuedByHost[%q] = %d, recount %d", after, h, s.queuedByHost[h], n)
		}
	}
	if len(s.clients.index) != len(refs) {
		t.Fatalf("after %s: %d interned clients, %d referenced", after, len(s.clients.index), len(refs))
	}
	for name, slot := range s.clients.index {
		if s.clients.names[slot] != name || s.clients.refs[slot] != refs[slot] {
			t.Fatalf("after %s: client %q slot %d has name %q and %d refs; recount %d", after, name, slot, s.clients.names[slot], s.clients.refs[slot], refs[slot])
		}
	}
	for _, slot := range s.clients.free {
		if refs[slot] != 0 || s.clients.refs[slot] != 0 {
			t.Fatalf("after %s: free client slot %d is referenced", after, slot)
		}
	}
	if m := s.Metrics(); m.Leases != leases || m.Waiters != waiters || m.Clients != len(refs) {
		t.Fatalf("after %s: metrics %+v; recount %d leases, %d waiters, %d clients", after, m, leases, waiters, len(refs))
	}
}

// TestCountersMatchRecount: goal — the running counts behind Metrics, the
// hello fast path and the client table stay equal to a recount, through
// random logs and restores. Method: the property test's log generator,
// recounting after every entry and after restoring at a random point.
func TestCountersMatchRecount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		log := drawLog(t)
		cfg := propConfig()
		s := mustNew(t, cfg)
		cut := rapid.IntRange(0, len(log)).Draw(t, "restoreAt")
		for i, e := range log {
			if i == cut {
				restored := mustNew(t, cfg)
				if err := restored.Restore(s.Snapshot()); err != nil {
					t.Fatalf("restore: %v", err)
				}
				checkCounters(t, restored, "restore")
				s = restored
			}
			s.Apply(e)
			checkCounters(t, s, entryText(e))
		}
	})
}

// applyAt applies cmd at the leader's mono reading ms (term 1) and returns
// the result and a copy of the events.
func applyAt(s *State, index uint64, ms int64, cmd Command) (Result, []string) {
	cmd.Mono = ms * int64(time.Millisecond)
	res, events := s.Apply(Entry{Index: index, Term: 1, Command: cmd})
	return res, describeEvents(events)
}

// TestExpiryTiesBreakByToken: goal — leases expiring at the same log time
// expire in token order, whatever order their resources entered the expiry
// heap, so a replica restored from a snapshot (heap rebuilt by name) emits
// the same events as one that replayed the log. Method: equal expiries on
// resources inserted against name and token order, one with two shared
// holders around another resource's token; compare the expire events of
// the live state and of a restored copy.
func TestExpiryTiesBreakByToken(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	script := []Command{
		acq("z", 'a', X, 100, 0), // token 1
		acq("s", 'b', S, 100, 0), // token 2
		acq("y", 'c', X, 100, 0), // token 3
		acq("s", 'd', S, 100, 0), // token 4, second shared holder of s
		acq("x", 'e', X, 100, 0), // token 5
	}
	for i, c := range script {
		if res, _ := applyAt(s, uint64(i+1), 0, c); !res.Granted {
			t.Fatalf("setup %d not granted", i)
		}
	}
	restored := mustNew(t, DefaultConfig())
	if err := restored.Restore(s.Snapshot()); err != nil {
		t.Fatal(err)
	}
	// s is due at token 2 (its earliest holder), before y (3); within s
	// holders leave last first.
	want := []string{"expire z a#1@100", "freed z", "expire s d#4@100", "expire s b#2@100", "freed s",
		"expire y c#3@100", "freed y", "expire x e#5@100", "freed x"}
	for name, st := range map[string]*State{"live": s, "restored": restored} {
		_, got := applyAt(st, 10, 100, tick())
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("%s state expired\n %q\nwant\n %q", name, got, want)
		}
	}
}

// TestDuplicateProposalAnswers: goal — an acquire entry applied twice
// answers the second time exactly as the first: the same grant (also when
// it is the resource's first holder) or the same queue position.
func TestDuplicateProposalAnswers(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	held := acq("r", 'a', X, 1000, 0)
	queued := acq("r", 'b', X, 1000, 500)
	first, _ := applyAt(s, 1, 0, held)
	again, _ := applyAt(s, 2, 1, held)
	if !again.Granted || again.Lease != first.Lease {
		t.Errorf("duplicate of a grant answered %s, want %s", describeResult(OpAcquire, again), describeResult(OpAcquire, first))
	}
	q1, _ := applyAt(s, 3, 2, queued)
	q2, _ := applyAt(s, 4, 3, queued)
	if !q2.Queued || q2.Position != 1 || q2.Position != q1.Position {
		t.Errorf("duplicate of a queued request answered %s, first %s", describeResult(OpAcquire, q2), describeResult(OpAcquire, q1))
	}
}

// TestInvariantAssertionFires: goal — the after-apply check really panics
// on the states it exists to catch (it is the last line of defence, and a
// check that never looks passes every test). Method: break a state behind
// the API's back.
func TestInvariantAssertionFires(t *testing.T) {
	for name, breakIt := range map[string]func(s *State, r *resource){
		"exclusive shares": func(s *State, r *resource) {
			r.addHolder(holder{id: lid('z'), token: s.lastToken, clientMode: makeClientMode(s.clients.ref("z"), Shared)})
		},
		"token above last": func(s *State, r *resource) { r.first.token = s.lastToken + 1 },
	} {
		t.Run(name, func(t *testing.T) {
			s := mustNew(t, DefaultConfig())
			applyAt(s, 1, 0, acq("r", 'a', X, 1000, 0))
			breakIt(s, s.resources.find("r"))
			defer func() {
				if recover() == nil {
					t.Fatal("assertInvariants did not panic")
				}
			}()
			s.assertInvariants("r")
		})
	}
}

// TestDedupeOrderCompacts: goal — the dedupe table's insertion-order slice
// does not keep a dead prefix larger than max(1024, live entries), so it
// cannot grow without bound. Method: many entries, evict all but a few.
func TestDedupeOrderCompacts(t *testing.T) {
	tab := newDedupeTable()
	for i := 0; i < 5000; i++ {
		tab.put(fmt.Sprint(i), int64(i), dedupeEntry{})
		if tab.head > 1024 && 2*tab.head > len(tab.order) {
			t.Fatalf("after put %d: dead prefix %d of %d", i, tab.head, len(tab.order))
		}
	}
	tab.evict(4989, 1<<20)
	if tab.len() != 10 {
		t.Fatalf("%d entries left, want 10", tab.len())
	}
	if tab.head > 1024 && 2*tab.head > len(tab.order) {
		t.Fatalf("dead prefix %d of %d kept after eviction", tab.head, len(tab.order))
	}
	for i := 4990; i < 5000; i++ {
		if _, ok := tab.get(fmt.Sprint(i)); !ok {
			t.Fatalf("entry %d lost in compaction", i)
		}
	}
}

// TestNameIndexChurnRebuildsInPlace: goal — acquire/release churn over a
// few names rebuilds the index in place (tombstones dropped) instead of
// growing it. Method: 5,000 insert/remove pairs over at most three live
// names; the table may grow once (8 slots hold no live names past the
// rule's integer division) and must then stay at 16.
func TestNameIndexChurnRebuildsInPlace(t *testing.T) {
	tab := newResourceTable()
	var live []*resource
	for i := 0; i < 5000; i++ {
		live = append(live, tab.insert(fmt.Sprint("r", i)))
		if len(live) == 3 {
			tab.remove(live[0])
			live = live[1:]
		}
		if n := len(tab.index.cur.slots); n > 2<<probeMinBits {
			t.Fatalf("after %d inserts with %d live names the index has %d slots", i+1, len(live), n)
		}
	}
}

// TestArenaUsesItsLastSlot: goal — the arena hands out every slot up to
// slotMask (Config caps MaxResources there) and refuses the next. Method:
// start the arena just below the end instead of allocating 16M records.
func TestArenaUsesItsLastSlot(t *testing.T) {
	a := newResourceArena()
	a.next = slotMask
	a.chunks = make([]*[arenaChunkLen]resource, slotMask>>arenaChunkShift)
	a.shared = make([]bool, len(a.chunks))
	if r := a.alloc("last"); slotOf(r.id) != slotMask {
		t.Fatalf("last slot %d, want %d", slotOf(r.id), slotMask)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("allocating past slotMask did not panic")
		}
	}()
	a.alloc("one too many")
}

// TestClientModeRejectsWideSlot: goal — a client slot that would spill into
// the unclaimed bit panics instead of corrupting the flag.
func TestClientModeRejectsWideSlot(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("slot 1<<clientSlotBits packed without a panic")
		}
	}()
	makeClientMode(1<<clientSlotBits, Exclusive)
}

// TestDecoderRejectsTruncatedVarints: goal — a varint cut short (or
// missing) is an error, not a zero: no encoding of ours ends in a varint,
// so the whole-input truncation tests cannot see this.
func TestDecoderRejectsTruncatedVarints(t *testing.T) {
	for _, b := range [][]byte{nil, {0x80}, {0xff, 0xff}} {
		d := decoder{b: b}
		d.varint()
		if !errors.Is(d.err, ErrCorrupt) {
			t.Errorf("varint of % x: err %v", b, d.err)
		}
		d = decoder{b: b}
		d.uvarint()
		if !errors.Is(d.err, ErrCorrupt) {
			t.Errorf("uvarint of % x: err %v", b, d.err)
		}
	}
}

// TestCountGuard: goal — a length prefix claiming more items than the rest
// of the input could hold is refused before any item is read (the guard
// that keeps corrupt input from allocating without bound), including when
// the count sits deep in the input. Method: counts at offset 30.
func TestCountGuard(t *testing.T) {
	prefix := make([]byte, 30)
	for _, tc := range []struct {
		count, rest, minBytes int
		ok                    bool
	}{
		{1, 19, 20, false},
		{1, 20, 20, true},
		{3, 59, 20, false},
		{3, 60, 20, true},
		{1 << 40, 100, 1, false},
	} {
		b := binary.AppendUvarint(bytes.Clone(prefix), uint64(tc.count))
		b = append(b, make([]byte, tc.rest)...)
		d := decoder{b: b, off: len(prefix)}
		n := d.count(tc.minBytes)
		if tc.ok && (d.err != nil || n != tc.count) {
			t.Errorf("count %d with %d bytes left (%d each): n %d err %v", tc.count, tc.rest, tc.minBytes, n, d.err)
		}
		if !tc.ok && (n != 0 || d.err == nil || !strings.Contains(d.err.Error(), "exceeds input")) {
			t.Errorf("count %d with %d bytes left (%d each): n %d err %v, want exceeds input", tc.count, tc.rest, tc.minBytes, n, d.err)
		}
	}
}

// TestTrailingBytesReported: goal — the error for extra bytes says how
// many there are (it is what an operator reads when a snapshot will not
// load; core/codec tests the same for commands).
func TestTrailingBytesReported(t *testing.T) {
	cmd := acq("r", 'a', X, 100, 0)
	s := mustNew(t, DefaultConfig())
	applyAt(s, 1, 0, cmd)
	if err := mustNew(t, DefaultConfig()).Restore(append(s.Snapshot(), 1, 2, 3)); err == nil || !strings.Contains(err.Error(), ": 3 trailing bytes") {
		t.Errorf("snapshot: %v", err)
	}
}

// TestCheckStamps: goal — the leader's suspect list and the proposer's
// host are validated on every op (they reach Apply on entries that carry
// nothing else), at their limits.
func TestCheckStamps(t *testing.T) {
	cfg := DefaultConfig()
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint("n", i)
		}
		return out
	}
	long := strings.Repeat("h", cfg.MaxIDLen+1)
	for _, tc := range []struct {
		name string
		cmd  Command
		ok   bool
	}{
		{"64 suspects", suspecting(tick(), many(maxSuspects)...), true},
		{"65 suspects", suspecting(tick(), many(maxSuspects+1)...), false},
		{"empty suspect", suspecting(tick(), "n1", ""), false},
		{"long suspect", suspecting(tick(), long), false},
		{"bad UTF-8 suspect with a host", from(suspecting(tick(), "n\xff"), "h1", 1), false},
		{"long host", from(tick(), long, 1), false},
		{"bad UTF-8 host", from(acq("r", 'a', X, 100, 0), "h\xff", 1), false},
		{"host and suspects", from(suspecting(acq("r", 'a', X, 100, 0), "n1", "n2"), "h1", 1), true},
	} {
		err := cfg.Check(&tc.cmd)
		if tc.ok && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.ok && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", tc.name, err)
		}
	}
}

// TestConfigValidate: goal — every limit of Config is checked, each at its
// boundary: the last good value passes and the first bad one fails.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"MinTTL 1ns", func(c *Config) { c.MinTTL = 1 }, true},
		{"MinTTL 0", func(c *Config) { c.MinTTL = 0 }, false},
		{"MaxTTL = MinTTL", func(c *Config) { c.MaxTTL = c.MinTTL }, true},
		{"MaxTTL < MinTTL", func(c *Config) { c.MaxTTL = c.MinTTL - 1 }, false},
		{"MaxTTL 40 days", func(c *Config) { c.MaxTTL = 40 * 24 * time.Hour }, true},
		{"MaxTTL over 40 days", func(c *Config) { c.MaxTTL = 40*24*time.Hour + 1 }, false},
		{"MaxWait 0", func(c *Config) { c.MaxWait = 0 }, true},
		{"MaxWait negative", func(c *Config) { c.MaxWait = -1 }, false},
		{"MaxWaitersPerQueue 1", func(c *Config) { c.MaxWaitersPerQueue = 1 }, true},
		{"MaxWaitersPerQueue 0", func(c *Config) { c.MaxWaitersPerQueue = 0 }, false},
		{"MaxResources 1", func(c *Config) { c.MaxResources = 1 }, true},
		{"MaxResources 0", func(c *Config) { c.MaxResources = 0 }, false},
		{"MaxResources at the arena's limit", func(c *Config) { c.MaxResources = maxResources }, true},
		{"MaxResources over the arena's limit", func(c *Config) { c.MaxResources = maxResources + 1 }, false},
		{"DedupeWindow 0", func(c *Config) { c.DedupeWindow = 0 }, true},
		{"DedupeWindow negative", func(c *Config) { c.DedupeWindow = -1 }, false},
		{"DedupeMax 0", func(c *Config) { c.DedupeMax = 0 }, true},
		{"DedupeMax negative", func(c *Config) { c.DedupeMax = -1 }, false},
		{"MaxIDLen 1", func(c *Config) { c.MaxIDLen = 1 }, true},
		{"MaxIDLen 0", func(c *Config) { c.MaxIDLen = 0 }, false},
		{"MaxIDLen 65535", func(c *Config) { c.MaxIDLen = 65535 }, true},
		{"MaxIDLen 65536", func(c *Config) { c.MaxIDLen = 65536 }, false},
	} {
		c := DefaultConfig()
		tc.edit(&c)
		err := c.Validate()
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s: Validate = %v", tc.name, err)
		}
		if _, err := New(c); tc.ok != (err == nil) {
			t.Errorf("%s: New = %v", tc.name, err)
		}
	}
}

// TestParseAndNames: goal — the API spellings parse to the right values,
// bad ones are refused with ErrInvalid, and lease ids round-trip.
func TestParseAndNames(t *testing.T) {
	for in, want := range map[string]Mode{"": Exclusive, "exclusive": Exclusive, "X": Exclusive, "x": Exclusive, "shared": Shared, "S": Shared, "s": Shared} {
		if m, err := ParseMode(in); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, m, err)
		}
	}
	for in, want := range map[string]Policy{"": FIFO, "fifo": FIFO, "throughput": Throughput} {
		if p, err := ParsePolicy(in); err != nil || p != want || (in != "" && p.String() != in) {
			t.Errorf("ParsePolicy(%q) = %v, %v", in, p, err)
		}
	}
	if _, err := ParseMode("both"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseMode(both): %v", err)
	}
	if _, err := ParsePolicy("lifo"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParsePolicy(lifo): %v", err)
	}
	id := NewLeaseID()
	if id.IsZero() || NewLeaseID() == id {
		t.Errorf("NewLeaseID gave %v twice or zero", id)
	}
	if back, err := ParseLeaseID(id.String()); err != nil || back != id {
		t.Errorf("ParseLeaseID(%s) = %v, %v", id, back, err)
	}
	for _, bad := range []string{"", strings.Repeat("0", 31), strings.Repeat("0", 33), strings.Repeat("g", 32), strings.Repeat("0", 32)} {
		if _, err := ParseLeaseID(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseLeaseID(%q): %v", bad, err)
		}
	}
	names := map[string]fmt.Stringer{
		"exclusive": Exclusive, "shared": Shared, "mode(9)": Mode(9),
		"orphan": OpOrphan, "hello": OpHello, "op(0)": Op(0),
		"freed": EventFreed, "renew": EventRenew, "event(0)": EventKind(0),
		"lease_ended": LeaseEnded, "unknown": Code(99),
	}
	for want, v := range names {
		if got := v.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

// TestRestoresVersion2: goal — a snapshot written before version 3 (no
// unclaimed flags, waiter owners or hosts, policies) still restores. A
// state with holders only encodes the same in both versions but the magic.
func TestRestoresVersion2(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	applyAt(s, 1, 0, acq("r", 'a', X, 1000, 0))
	applyAt(s, 2, 5, acq("s", 'b', S, 1000, 0))
	v3 := s.snapshotVersion(5)
	v2 := append([]byte(snapshotMagicV2), v3[len(snapshotMagic):]...)
	restored := mustNew(t, DefaultConfig())
	if err := restored.Restore(v2); err != nil {
		t.Fatalf("restore v2: %v", err)
	}
	if !bytes.Equal(restored.snapshotVersion(5), v3) {
		t.Fatal("v2 snapshot restored to a different state")
	}
	for _, bad := range [][]byte{[]byte("LKSNAP"), []byte("LKSNAP4\n"), nil} {
		if err := restored.Restore(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("restore %q: %v", bad, err)
		}
	}
}

// TestDedupeKeysDoNotCollide: goal — two different (client_id, request_id)
// pairs never share a dedupe entry, also when one client id is a prefix of
// another (c1 + 23 and c12 + 3 spell the same bytes). Method: the two
// acquires on different resources must both be granted, each its own lease.
func TestDedupeKeysDoNotCollide(t *testing.T) {
	pairs := [][2]string{{"c1", "23"}, {"c12", "3"}, {"c", "123"}, {"c123", ""}, {"c12", "3\x00"}, {"c12\x00", "3"}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		k := dedupeKeyOf(p[0], p[1])
		if q, ok := seen[k]; ok {
			t.Errorf("dedupe key of %q equals that of %q", p, q)
		}
		seen[k] = p
	}
	s := mustNew(t, DefaultConfig())
	a, _ := applyAt(s, 1, 0, as(acq("r1", 'a', X, 1000, 0), "c1", "23"))
	b, _ := applyAt(s, 2, 1, as(acq("r2", 'b', X, 1000, 0), "c12", "3"))
	if !a.Granted || !b.Granted || b.Lease.ID != lid('b') {
		t.Errorf("c1/23 answered %s, c12/3 answered %s; want two grants", describeResult(OpAcquire, a), describeResult(OpAcquire, b))
	}
}

// TestRestoredDedupeKeepsPolicy: goal — a remembered request keeps its
// policy through a snapshot, so a throughput-mode retry after a restore
// replays its grant instead of being refused as request_id_reused.
func TestRestoredDedupeKeepsPolicy(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	first, _ := applyAt(s, 1, 0, throughput(as(acq("r", 'a', X, 1000, 0), "c", "q")))
	restored := mustNew(t, DefaultConfig())
	if err := restored.Restore(s.Snapshot()); err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]*State{"live": s, "restored": restored} {
		retry, _ := applyAt(st, 2, 1, throughput(as(acq("r", 'b', X, 1000, 0), "c", "q")))
		if !retry.Granted || retry.Lease.ID != first.Lease.ID {
			t.Errorf("%s: retry answered %s, want the first grant %s", name, describeResult(OpAcquire, retry), describeResult(OpAcquire, first))
		}
	}
}

// TestNameIndexSpreadsHomes: goal — names start probing at slots spread
// over the table (a constant home slot still finds every name, but turns
// each lookup into a scan: the slowdown a fixed hash seed invites).
// Method: the home slots of 64 names in a 1024-slot table.
func TestNameIndexSpreadsHomes(t *testing.T) {
	x := newNameIndex(newResourceArena())
	tab := newProbeTable(10)
	homes := map[uint32]bool{}
	for i := 0; i < 64; i++ {
		home, _ := tab.start(x.hash(fmt.Sprint("name-", i)))
		homes[home] = true
	}
	// 64 random draws from 1024 slots give ~62 distinct homes; 32 leaves
	// room for any fair hash.
	if len(homes) < 32 {
		t.Errorf("64 names start at %d distinct slots of 1024", len(homes))
	}
}
