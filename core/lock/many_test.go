package lock

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// many builds an OpAcquireMany whose lease ids derive from label: part j
// is named label+j by manyLabel ("m", "m1", "m2"...).
func many(label byte, mode Mode, ttlMs, waitMs int64, resources ...string) Command {
	return Command{
		Op: OpAcquireMany, Resources: resources, ClientID: "client-" + string(label),
		LeaseID: lid(label), Mode: mode, TTLMs: ttlMs, WaitMs: waitMs,
	}
}

// cancelAll cancels multi request label on resources.
func cancelAll(label byte, resources ...string) Command {
	return Command{Op: OpCancel, Resources: resources, LeaseID: lid(label)}
}

// manyLabel names lid(x) "x" and its part j>0 "xj"; anything else as label.
func manyLabel(id LeaseID) string {
	base := id
	base[15] = 0
	if base[0] >= 'a' && base[0] <= 'z' && base == lid(base[0]) && id[15] > 0 {
		return fmt.Sprintf("%c%d", id[0], id[15])
	}
	return label(id)
}

func manyLeaseText(l Lease) string {
	if l.Token == 0 {
		return manyLabel(l.ID)
	}
	return fmt.Sprintf("%s#%d@%d", manyLabel(l.ID), l.Token, l.ExpiresAt/int64(time.Millisecond))
}

// describeManyResult extends describeResult with a multi request's leases
// and the resource that blocked it.
func describeManyResult(op Op, r Result) string {
	if len(r.Leases) > 0 {
		parts := make([]string, len(r.Leases))
		for i, l := range r.Leases {
			parts[i] = manyLeaseText(l)
		}
		what := "granted"
		if r.Code != OK {
			what = r.Code.String()
		}
		return what + " [" + strings.Join(parts, " ") + "]"
	}
	switch {
	case op == OpAcquireMany && r.Code == OK && !r.Granted && !r.Queued:
		return "denied by " + r.Blocked
	case (op == OpRelease || op == OpOrphan) && r.Code == OK:
		return "released " + manyLeaseText(r.Lease)
	case op == OpStatus:
		var holders, queue []string
		for _, h := range r.Status.Holders {
			holders = append(holders, manyLeaseText(h))
		}
		for _, w := range r.Status.Queue {
			queue = append(queue, manyLabel(w.ID))
		}
		return fmt.Sprintf("holders=[%s] queue=[%s]", strings.Join(holders, " "), strings.Join(queue, " "))
	}
	return describeResult(op, r)
}

// describeManyEvent is describeEvent with part labels and "/n" on the
// events of a multi request of n resources.
func describeManyEvent(e Event) string {
	kind := e.Kind.String()
	if e.Queued {
		kind += "*"
	}
	if e.Kind == EventFreed {
		return kind + " " + e.Resource
	}
	text := kind + " " + e.Resource + " " + manyLeaseText(e.Lease)
	if e.ManySize > 0 {
		text += fmt.Sprintf(" /%d", e.ManySize)
	}
	return text
}

// runManySteps is runSteps with the multi-aware descriptions; it also
// checks every event of a multi request names the request its lease
// derives from.
func runManySteps(t *testing.T, cfg Config, steps []step) *State {
	t.Helper()
	s := mustNew(t, cfg)
	term := uint64(1)
	for i, st := range steps {
		if st.term != 0 {
			term = st.term
		}
		cmd := st.cmd
		cmd.Mono = st.at * int64(time.Millisecond)
		res, events := s.Apply(Entry{Index: uint64(i + 1), Term: term, Command: cmd})
		if got := describeManyResult(cmd.Op, res); got != st.want {
			t.Errorf("step %d (%v at %d): result %q, want %q", i, cmd.Op, st.at, got, st.want)
		}
		var got []string
		for _, e := range events {
			got = append(got, describeManyEvent(e))
			if e.ManySize > 0 && (e.Many.IsZero() || e.Lease.ID[0] != e.Many[0]) {
				t.Errorf("step %d: event %s names request %s", i, describeManyEvent(e), e.Many)
			}
		}
		if !slices.Equal(got, st.events) {
			t.Errorf("step %d (%v at %d): events\n got  %q\n want %q", i, cmd.Op, st.at, got, st.events)
		}
		checkSnapshotRoundTrip(t, s)
		checkCounters(t, s, fmt.Sprintf("step %d", i))
	}
	return s
}

// TestAcquireMany: goal — each rule of OpAcquireMany (immediate all-or-none
// grants, queueing in every queue in one entry, blocking the queues it
// heads, granting in one entry once it heads all, and leaving every queue
// at once on deadline, cancel, hello and suspicion). Method: scripted logs
// with every result and event spelled out; each step also round-trips a
// snapshot and recounts the state's counters.
func TestAcquireMany(t *testing.T) {
	small := DefaultConfig()
	small.MaxWaitersPerQueue = 1
	few := DefaultConfig()
	few.MaxResources = 2
	cases := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{name: "all free: granted in one entry, a token each, in request order", steps: []step{
			{at: 0, cmd: many('m', X, 100, 0, "q", "p"), want: "granted [m#1@100 m1#2@100]",
				events: []string{"grant q m#1@100 /2", "grant p m1#2@100 /2"}},
			{at: 1, cmd: acq("p", 'a', X, 100, 0), want: "denied"},
			{at: 2, cmd: rel("q", 'm'), want: "released m#1@100", events: []string{"release q m#1@100", "freed q"}},
			{at: 3, cmd: status("p"), want: "holders=[m1#2@100] queue=[]"},
		}},
		{name: "one resource held: nothing changes, the blocker is named", steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant q a#1@100"}},
			{at: 1, cmd: many('m', X, 100, 0, "p", "q", "r"), want: "denied by q"},
			{at: 2, cmd: status("p"), want: "holders=[] queue=[]"},
			{at: 3, cmd: acq("p", 'b', X, 100, 0), want: "granted b#2@103", events: []string{"grant p b#2@103"}},
		}},
		{name: "shared joins shared holders, but a queue blocks it (FIFO)", steps: []step{
			{at: 0, cmd: acq("p", 'a', S, 100, 0), want: "granted a#1@100", events: []string{"grant p a#1@100"}},
			{at: 1, cmd: many('m', S, 100, 0, "p", "q"), want: "granted [m#2@101 m1#3@101]",
				events: []string{"grant p m#2@101 /2", "grant q m1#3@101 /2"}},
			{at: 2, cmd: acq("q", 'x', X, 100, 500), want: "queued x pos=1", events: []string{"enqueue q x"}},
			{at: 3, cmd: many('n', S, 100, 0, "p", "q"), want: "denied by q"},
		}},
		{name: "waits in every queue, granted in one entry once it heads all", steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant q a#1@100"}},
			{at: 1, cmd: many('m', X, 50, 500, "p", "q"), want: "queued m pos=1",
				events: []string{"enqueue p m /2", "enqueue q m1 /2"}},
			{at: 2, cmd: status("p"), want: "holders=[] queue=[m]"},
			// m heads p's queue though p is free: it blocks p, no partial holding.
			{at: 3, cmd: acq("p", 'b', X, 100, 0), want: "denied"},
			{at: 4, cmd: acq("p", 'c', S, 100, 500), want: "queued c pos=2", events: []string{"enqueue p c"}},
			{at: 10, cmd: rel("q", 'a'), want: "released a#1@100",
				events: []string{"release q a#1@100", "grant* p m#2@60 /2", "grant* q m1#3@60 /2"}},
			{at: 11, cmd: status("p"), want: "holders=[m#2@60] queue=[c]"},
			{at: 20, cmd: rel("p", 'm'), want: "released m#2@60",
				events: []string{"release p m#2@60", "grant* p c#4@120"}},
		}},
		{name: "deadline: a tick takes it out of every queue and what it blocked moves on", steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 1000, 0), want: "granted a#1@1000", events: []string{"grant q a#1@1000"}},
			{at: 1, cmd: many('m', X, 50, 100, "p", "q"), want: "queued m pos=1",
				events: []string{"enqueue p m /2", "enqueue q m1 /2"}},
			{at: 2, cmd: acq("p", 'c', X, 100, 500), want: "queued c pos=2", events: []string{"enqueue p c"}},
			{at: 100, cmd: tick(), want: "t=100"},
			// p has no holder whose expiry would wake it: the heap keeps it
			// at m's deadline instead.
			{at: 101, cmd: tick(), want: "t=101",
				events: []string{"cancel p m /2", "cancel q m1 /2", "grant* p c#2@201"}},
			{at: 103, cmd: cancelAll('m', "p", "q"), want: "absent"},
		}},
		{name: "deadline before the blocking lease expires: in deadline order", steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 30, 0), want: "granted a#1@30", events: []string{"grant q a#1@30"}},
			{at: 1, cmd: many('m', X, 50, 10, "p", "q"), want: "queued m pos=1",
				events: []string{"enqueue p m /2", "enqueue q m1 /2"}},
			{at: 40, cmd: tick(), want: "t=40",
				events: []string{"cancel p m /2", "cancel q m1 /2", "freed p", "expire q a#1@30", "freed q"}},
		}},
		{name: "cancel takes it out of every queue; a joined retry keeps it", steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant q a#1@100"}},
			{at: 1, cmd: as(many('m', X, 50, 500, "p", "q"), "cm", "r1"), want: "queued m pos=1",
				events: []string{"enqueue p m /2", "enqueue q m1 /2"}},
			{at: 2, cmd: as(many('n', X, 50, 800, "p", "q"), "cm", "r1"), want: "queued m pos=1",
				events: []string{"join p m /2", "join q m1 /2"}},
			{at: 3, cmd: owned(cancelAll('m', "p", "q"), 'm'), want: "queued m pos=1"},
			{at: 4, cmd: owned(cancelAll('m', "p", "q"), 'n'), want: "cancelled pos=1",
				events: []string{"cancel p m /2", "cancel q m1 /2", "freed p"}},
			{at: 5, cmd: acq("p", 'b', X, 100, 0), want: "granted b#2@105", events: []string{"grant p b#2@105"}},
		}},
		{name: "a cancel that finds it granted reports every lease", steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant q a#1@100"}},
			{at: 1, cmd: many('m', X, 50, 500, "p", "q"), want: "queued m pos=1",
				events: []string{"enqueue p m /2", "enqueue q m1 /2"}},
			{at: 2, cmd: rel("q", 'a'), want: "released a#1@100",
				events: []string{"release q a#1@100", "grant* p m#2@52 /2", "grant* q m1#3@52 /2"}},
			{at: 3, cmd: cancelAll('m', "p", "q"), want: "granted [m#2@52 m1#3@52]"},
			{at: 4, cmd: rel("p", 'm'), want: "released m#2@52", events: []string{"release p m#2@52", "freed p"}},
			{at: 5, cmd: cancelAll('m', "p", "q"), want: "lease_ended [m#2@52 m1#3@52]"},
		}},
		{name: "a cancel whose caller left releases the unclaimed grant everywhere", steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant q a#1@100"}},
			{at: 1, cmd: many('m', X, 50, 500, "p", "q"), want: "queued m pos=1",
				events: []string{"enqueue p m /2", "enqueue q m1 /2"}},
			{at: 2, cmd: rel("q", 'a'), want: "released a#1@100",
				events: []string{"release q a#1@100", "grant* p m#2@52 /2", "grant* q m1#3@52 /2"}},
			{at: 3, cmd: owned(gone(cancelAll('m', "p", "q")), 'm'), want: "absent",
				events: []string{"release p m#2@52", "freed p", "release q m1#3@52", "freed q"}},
		}},
		{name: "hello from a restarted node takes it out of every queue", steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant q a#1@100"}},
			{at: 1, cmd: from(many('m', X, 50, 500, "p", "q"), "h1", 1), want: "queued m pos=1",
				events: []string{"enqueue p m /2", "enqueue q m1 /2"}},
			{at: 2, cmd: from(acq("p", 'c', X, 100, 500), "h2", 1), want: "queued c pos=2", events: []string{"enqueue p c"}},
			{at: 3, cmd: hello("h1", 2), want: "ok",
				events: []string{"cancel p m /2", "cancel q m1 /2", "grant* p c#2@103"}},
		}},
		{name: "a suspected node's request is cancelled everywhere instead of granted", steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant q a#1@100"}},
			{at: 1, cmd: from(many('m', X, 50, 500, "p", "q"), "h1", 1), want: "queued m pos=1",
				events: []string{"enqueue p m /2", "enqueue q m1 /2"}},
			{at: 2, cmd: suspecting(rel("q", 'a'), "h1"), want: "released a#1@100",
				events: []string{"release q a#1@100", "cancel p m /2", "cancel q m1 /2", "freed q", "freed p"}},
		}},
		{name: "two multi requests in opposite orders cannot deadlock: the older goes first", steps: []step{
			{at: 0, cmd: acq("p", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant p a#1@100"}},
			{at: 0, cmd: acq("q", 'b', X, 100, 0), want: "granted b#2@100", events: []string{"grant q b#2@100"}},
			{at: 1, cmd: many('m', X, 50, 500, "p", "q"), want: "queued m pos=1",
				events: []string{"enqueue p m /2", "enqueue q m1 /2"}},
			{at: 2, cmd: many('n', X, 50, 500, "q", "p"), want: "queued n pos=2",
				events: []string{"enqueue q n /2", "enqueue p n1 /2"}},
			{at: 3, cmd: rel("q", 'b'), want: "released b#2@100", events: []string{"release q b#2@100"}},
			{at: 4, cmd: rel("p", 'a'), want: "released a#1@100",
				events: []string{"release p a#1@100", "grant* p m#3@54 /2", "grant* q m1#4@54 /2"}},
			{at: 5, cmd: rel("p", 'm'), want: "released m#3@54", events: []string{"release p m#3@54"}},
			{at: 6, cmd: rel("q", 'm'+0), want: "not_holder"},
			{at: 6, cmd: Command{Op: OpRelease, Resource: "q", LeaseID: ManyLeaseID(lid('m'), 1)}, want: "released m1#4@54",
				events: []string{"release q m1#4@54", "grant* q n#5@56 /2", "grant* p n1#6@56 /2"}},
		}},
		{name: "retries: same body answers the same leases, another body is refused", steps: []step{
			{at: 0, cmd: as(many('m', X, 100, 0, "p", "q"), "cm", "r1"), want: "granted [m#1@100 m1#2@100]",
				events: []string{"grant p m#1@100 /2", "grant q m1#2@100 /2"}},
			{at: 1, cmd: as(many('n', X, 100, 0, "p", "q"), "cm", "r1"), want: "granted [m#1@100 m1#2@100]"},
			{at: 2, cmd: as(many('n', X, 100, 0, "q", "p"), "cm", "r1"), want: "request_id_reused"},
			{at: 2, cmd: as(many('n', X, 100, 0, "p"), "cm", "r1"), want: "request_id_reused"},
			{at: 2, cmd: as(many('n', S, 100, 0, "p", "q"), "cm", "r1"), want: "request_id_reused"},
			{at: 2, cmd: as(acq("p", 'n', X, 100, 0), "cm", "r1"), want: "request_id_reused"},
			{at: 3, cmd: rel("p", 'm'), want: "released m#1@100", events: []string{"release p m#1@100", "freed p"}},
			{at: 4, cmd: as(many('n', X, 100, 0, "p", "q"), "cm", "r1"), want: "lease_ended [m#1@100 m1#2@100]"},
		}},
		{name: "a single request's id is not a multi request's", steps: []step{
			{at: 0, cmd: as(acq("p", 'a', X, 100, 0), "c", "r1"), want: "granted a#1@100", events: []string{"grant p a#1@100"}},
			{at: 1, cmd: as(many('m', X, 100, 0, "p"), "c", "r1"), want: "request_id_reused"},
		}},
		{name: "a duplicated proposal is answered, never applied twice", steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant q a#1@100"}},
			{at: 1, cmd: many('m', X, 50, 500, "p", "q"), want: "queued m pos=1",
				events: []string{"enqueue p m /2", "enqueue q m1 /2"}},
			{at: 1, cmd: many('m', X, 50, 500, "p", "q"), want: "queued m pos=1"},
			{at: 2, cmd: many('n', X, 50, 0, "r", "s"), want: "granted [n#2@52 n1#3@52]",
				events: []string{"grant r n#2@52 /2", "grant s n1#3@52 /2"}},
			{at: 2, cmd: many('n', X, 50, 0, "r", "s"), want: "granted [n#2@52 n1#3@52]"},
		}},
		{name: "limits: a full queue or table refuses the whole request", cfg: small, steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant q a#1@100"}},
			{at: 1, cmd: acq("q", 'b', X, 100, 500), want: "queued b pos=1", events: []string{"enqueue q b"}},
			{at: 2, cmd: many('m', X, 50, 500, "p", "q"), want: "queue_full"},
			{at: 3, cmd: status("p"), want: "holders=[] queue=[]"},
		}},
		{name: "limits: too many locks", cfg: few, steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant q a#1@100"}},
			{at: 1, cmd: many('m', X, 50, 0, "p", "r"), want: "too_many_locks"},
			{at: 2, cmd: many('m', X, 50, 500, "p", "q", "r"), want: "too_many_locks"},
			{at: 3, cmd: many('m', X, 50, 0, "p"), want: "granted [m#2@53]", events: []string{"grant p m#2@53 /1"}},
		}},
		{name: "throughput policy never queues", steps: []step{
			{at: 0, cmd: acq("q", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant q a#1@100"}},
			{at: 1, cmd: throughput(many('m', X, 50, 500, "p", "q")), want: "denied by q"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg == (Config{}) {
				cfg = DefaultConfig()
			}
			runManySteps(t, cfg, tc.steps)
		})
	}
}

// TestAcquireManyInvalid: goal — a malformed multi request is refused
// before it touches state, for each rule of Config.Check. Method: apply
// each to a state holding one lease and compare digests.
func TestAcquireManyInvalid(t *testing.T) {
	long := make([]string, MaxManyResources+1)
	for i := range long {
		long[i] = fmt.Sprintf("r%d", i)
	}
	zeroing := many('m', X, 50, 0, "p", "q")
	// Part 1 of this id wraps to the zero id.
	zeroing.LeaseID = LeaseID{8: 0xff, 9: 0xff, 10: 0xff, 11: 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff}
	withResource := many('m', X, 50, 0, "p")
	withResource.Resource = "p"
	cases := map[string]Command{
		"no resources":        many('m', X, 50, 0),
		"too many resources":  many('m', X, 50, 0, long...),
		"named twice":         many('m', X, 50, 0, "p", "q", "p"),
		"empty name":          many('m', X, 50, 0, "p", ""),
		"invalid utf-8":       many('m', X, 50, 0, "p", "\xff"),
		"resource too":        withResource,
		"no ttl":              many('m', X, 0, 0, "p"),
		"no mode":             many('m', 0, 50, 0, "p"),
		"wait too long":       many('m', X, 50, 700_000, "p"),
		"derived id is zero":  zeroing,
		"no client":           as(many('m', X, 50, 0, "p"), "", ""),
		"resources on single": {Op: OpRelease, Resource: "p", Resources: []string{"p"}, LeaseID: lid('a')},
		"cancel both":         {Op: OpCancel, Resource: "p", Resources: []string{"p"}, LeaseID: lid('a')},
	}
	for name, cmd := range cases {
		t.Run(name, func(t *testing.T) {
			// twin applies a tick where s applies cmd: the log index moves
			// on in both, nothing else may.
			s, twin := mustNew(t, DefaultConfig()), mustNew(t, DefaultConfig())
			for _, st := range []*State{s, twin} {
				st.Apply(Entry{Index: 1, Term: 1, Command: acq("p", 'a', X, 100, 0)})
			}
			if err := s.Config().Check(&cmd); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Check = %v, want ErrInvalid", err)
			}
			res, events := s.Apply(Entry{Index: 2, Term: 1, Command: cmd})
			twin.Apply(Entry{Index: 2, Term: 1, Command: tick()})
			if res.Code != Invalid || len(events) != 0 || s.Digest() != twin.Digest() {
				t.Fatalf("applied: %+v, %d events, changed=%v", res, len(events), s.Digest() != twin.Digest())
			}
		})
	}
	if err := DefaultConfig().Check(ptr(many('m', X, 50, 0, long[:MaxManyResources]...))); err != nil {
		t.Fatalf("%d resources refused: %v", MaxManyResources, err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestManySnapshotAndDigest: goal — a queued multi request and its grants
// are part of the snapshot and the digest, and a snapshot that splits a
// multi request is refused. Method: compare digests with and without the
// request; corrupt one part's resource list in the encoding.
func TestManySnapshotAndDigest(t *testing.T) {
	build := func(cmds ...Command) *State {
		s := mustNew(t, DefaultConfig())
		for i, c := range cmds {
			c.Mono = int64(i) * int64(time.Millisecond)
			s.Apply(Entry{Index: uint64(i + 1), Term: 1, Command: c})
		}
		return s
	}
	held := acq("q", 'a', X, 100, 0)
	singles := build(held, acq("p", 'm', X, 50, 500), acq("q", 'n', X, 50, 500))
	multi := build(held, many('m', X, 50, 500, "p", "q"), tick())
	if singles.Digest() == multi.Digest() {
		t.Fatal("a multi request and two single ones have the same digest")
	}
	snap := multi.Snapshot()
	// Rename q to z in the second part's copy of the request's resources.
	i := strings.LastIndex(string(snap), "\x01p\x01q")
	if i < 0 {
		t.Fatal("resource list not found in the snapshot")
	}
	broken := slices.Clone(snap)
	broken[i+3] = 'z'
	if err := mustNew(t, DefaultConfig()).Restore(broken); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("restore of a split multi request: %v, want ErrCorrupt", err)
	}
	restored := mustNew(t, DefaultConfig())
	if err := restored.Restore(snap); err != nil {
		t.Fatal(err)
	}
	res, events := restored.Apply(Entry{Index: 9, Term: 1, Command: rel("q", 'a')})
	if got := describeManyEvent(events[len(events)-1]); res.Code != OK || got != "grant* q m1#3@52 /2" {
		t.Fatalf("restored state granted %q", got)
	}
}
