package checker

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/models"
)

const (
	ms  = int64(time.Millisecond)
	sec = int64(time.Second)
)

// cleanHistory is a small correct run on resource "r": a holds L1, b queues,
// a releases and b is granted L2 in the same entry, b releases. A fault ends
// before the handoff. The fenced store records the writes as a harness would.
func cleanHistory() *History {
	now := int64(0)
	store := NewFencedStore(func() int64 { return now })
	now = sec
	store.RecordGrantReturned("r", "a", "L1", 1)
	store.Write("r", "a", "L1", 1, false)
	now = 3500 * ms
	store.RecordGrantReturned("r", "b", "L2", 2)
	store.Write("r", "a", "L1", 1, false) // stale: must be rejected
	writes, grants := store.Records()

	acq := func(client, mode string, wait bool) models.LockInput {
		return models.LockInput{Op: models.Acquire, Resource: "r", ClientID: client, Mode: mode, TTLNs: 10 * sec, Wait: wait}
	}
	rel := func(id string) models.LockInput {
		return models.LockInput{Op: models.Release, Resource: "r", LeaseID: id}
	}
	granted := func(id string, token uint64, at int64) models.LockOutput {
		return models.LockOutput{Granted: true, LeaseID: id, Token: token, LogTimeNs: at, ExpiresAtNs: at + 10*sec}
	}
	return &History{
		Seed:     42,
		Scenario: "clean",
		Ops: []Op{
			{ClientID: 0, Input: acq("a", models.Exclusive, false), Output: granted("L1", 1, sec), Call: 0, Return: sec},
			{ClientID: 1, Input: acq("b", models.Exclusive, true), Output: granted("L2", 2, 3*sec), Call: 2 * sec, Return: 3500 * ms},
			{ClientID: 0, Input: rel("L1"), Output: models.LockOutput{LogTimeNs: 3 * sec}, Call: 2900 * ms, Return: 3100 * ms},
			{ClientID: 1, Input: rel("L2"), Output: models.LockOutput{LogTimeNs: 5 * sec}, Call: 4900 * ms, Return: 5100 * ms},
			{ClientID: 2, Input: models.LockInput{Op: models.Status, Resource: "r"}, Output: models.LockOutput{Unknown: true}, Call: 6 * sec, Return: math.MaxInt64},
		},
		Writes: writes,
		Grants: grants,
		Trace: []TraceEvent{
			{Index: 1, LogTime: sec, Kind: KindGrant, Resource: "r", LeaseID: "L1", Client: "a", Mode: models.Exclusive, Token: 1, ExpiresAt: 11 * sec},
			{Index: 2, LogTime: 2 * sec, Kind: KindEnqueue, Resource: "r", LeaseID: "L2", Client: "b", Mode: models.Exclusive},
			{Index: 3, LogTime: 3 * sec, Kind: KindRelease, Resource: "r", LeaseID: "L1", Client: "a"},
			{Index: 3, LogTime: 3 * sec, Kind: KindGrant, Resource: "r", LeaseID: "L2", Client: "b", Mode: models.Exclusive, Token: 2, ExpiresAt: 13 * sec},
			{Index: 4, LogTime: 5 * sec, Kind: KindRelease, Resource: "r", LeaseID: "L2", Client: "b"},
		},
		Faults:  []Fault{{Name: "partition", Start: 500 * ms, End: 1500 * ms, Target: "n1"}},
		Wakeups: []Wakeup{{Resource: "r", Index: 3, Waiters: 1}},
		Notes:   map[string]string{"purpose": "test"},
	}
}

func strictOptions() Options {
	return Options{
		LinearizabilityTimeout: 5 * time.Second,
		StrictFIFO:             true,
		RecoveryBound:          time.Second,
		GrantBound:             5 * time.Second,
		ElectionBound:          2 * time.Second,
	}
}

// clone deep-copies a history through its JSON form.
func clone(t *testing.T, h *History) *History {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var c History
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// checksOf lists the distinct check names of the violations.
func checksOf(t *testing.T, res Result) []string {
	t.Helper()
	var out []string
	for _, v := range res.Violations {
		if !slices.Contains(out, v.Check) {
			out = append(out, v.Check)
		}
		if !strings.HasPrefix(v.Message, v.Check+": ") {
			t.Errorf("message lacks its check prefix: %s", v.Message)
		}
	}
	return out
}

// TestCheckClean checks that a correct run passes every check with stats that reflect it.
func TestCheckClean(t *testing.T) {
	res := Check(context.Background(), cleanHistory(), strictOptions())
	if res.Verdict != Success || len(res.Violations) > 0 {
		t.Fatalf("verdict %s, violations %v, notes %v", res.Verdict, res.Violations, res.Notes)
	}
	st := res.Stats
	if st.Ops != 5 || st.UnknownOps != 1 || st.Grants != 2 || st.QueuedGrants != 1 || st.RejectedWrites != 1 || st.MaxWaitNs != sec || st.Inversions != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCheckCatches mutates the clean run into one violation at a time and checks that exactly the responsible check reports it.
func TestCheckCatches(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(h *History, o *Options)
		want   string
	}{
		{"client with two ops in flight", func(h *History, o *Options) { h.Ops[1].ClientID = 0 }, CheckAssumptions},
		{"unknown op that returns", func(h *History, o *Options) { h.Ops[4].Return = 7 * sec }, CheckAssumptions},
		{"duplicate seq", func(h *History, o *Options) { h.Writes[0].Seq = h.Grants[0].Seq }, CheckAssumptions},
		{"second exclusive grant", func(h *History, o *Options) {
			h.Ops = append(h.Ops, Op{ClientID: 3,
				Input:  models.LockInput{Op: models.Acquire, Resource: "r", ClientID: "c", Mode: models.Exclusive, TTLNs: sec},
				Output: models.LockOutput{Granted: true, LeaseID: "L9", Token: 9, LogTimeNs: 2 * sec, ExpiresAtNs: 3 * sec},
				Call:   1500 * ms, Return: 2500 * ms})
		}, CheckLinearizability},
		{"stale write accepted", func(h *History, o *Options) {
			h.Writes = append(h.Writes, Write{Seq: 100, At: 4 * sec, Resource: "r", LeaseID: "L1", Client: "a", Token: 1, Accepted: true})
		}, CheckFencing},
		{"token reused", func(h *History, o *Options) { h.Trace[3].Token = 1 }, CheckFencing},
		{"token decreased", func(h *History, o *Options) {
			h.Trace = append(h.Trace, TraceEvent{Index: 5, LogTime: 6 * sec, Kind: KindGrant, Resource: "r", LeaseID: "L3", Client: "c", Token: 0, ExpiresAt: 7 * sec})
			h.Ops = append(h.Ops, Op{ClientID: 3,
				Input:  models.LockInput{Op: models.Acquire, Resource: "r", ClientID: "c", Mode: models.Exclusive, TTLNs: sec},
				Output: models.LockOutput{Unknown: true}, Call: 5900 * ms, Return: math.MaxInt64})
		}, CheckFencing},
		{"overlapping exclusive holders", func(h *History, o *Options) {
			h.Trace = slices.Delete(h.Trace, 2, 3) // L1 never released: lives until 11s
		}, CheckFencing},
		{"log time backwards", func(h *History, o *Options) { h.Trace[4].LogTime = 2500 * ms }, CheckFencing},
		{"waiter overtaken", func(h *History, o *Options) {
			h.Trace = slices.Insert(h.Trace, 1, TraceEvent{Index: 2, LogTime: 2 * sec, Kind: KindEnqueue, Resource: "r", LeaseID: "LE", Client: "early", Mode: models.Exclusive})
			h.Trace = slices.Insert(h.Trace, 5, TraceEvent{Index: 4, LogTime: 5 * sec, Kind: KindCancel, Resource: "r", LeaseID: "LE", Client: "early"})
		}, CheckFIFO},
		{"waiter waits too long", func(h *History, o *Options) { o.GrantBound = 100 * time.Millisecond }, CheckLiveness},
		{"lease never freed", func(h *History, o *Options) {
			h.Trace = h.Trace[:4] // L2 (expires 13s) never released nor expired
			h.Trace = append(h.Trace, TraceEvent{Index: 9, LogTime: 20 * sec, Kind: KindEnqueue, Resource: "q", Client: "z"})
		}, CheckLiveness},
		{"lease freed late", func(h *History, o *Options) {
			h.Trace[4] = TraceEvent{Index: 4, LogTime: 16 * sec, Kind: KindExpire, Resource: "r", LeaseID: "L2"}
		}, CheckLiveness},
		{"herd woken", func(h *History, o *Options) { h.Wakeups[0].Waiters = 3 }, CheckHerd},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, opts := clone(t, cleanHistory()), strictOptions()
			tc.mutate(h, &opts)
			res := Check(context.Background(), h, opts)
			if res.Verdict != Failure {
				t.Fatalf("verdict %s, notes %v", res.Verdict, res.Notes)
			}
			for _, v := range res.Violations {
				t.Log(v.Message)
			}
			if got := checksOf(t, res); !slices.Equal(got, []string{tc.want}) {
				t.Fatalf("checks %v, want [%s]; violations %v", got, tc.want, res.Violations)
			}
		})
	}
}

// TestCheckLenientOptions checks that inversions and herds are only counted when the options allow the policy.
func TestCheckLenientOptions(t *testing.T) {
	h := clone(t, cleanHistory())
	h.Trace = slices.Insert(h.Trace, 1, TraceEvent{Index: 2, LogTime: 2 * sec, Kind: KindEnqueue, Resource: "r", Client: "early", Mode: models.Exclusive})
	h.Wakeups[0].Waiters = 2
	opts := strictOptions()
	opts.StrictFIFO, opts.AllowHerd = false, true
	res := Check(context.Background(), h, opts)
	if res.Verdict != Success || res.Stats.Inversions != 1 || res.Stats.HerdExcess != 1 {
		t.Fatalf("verdict %s, stats %+v, violations %v", res.Verdict, res.Stats, res.Violations)
	}
}

// TestCheckUnknown checks an unfinished linearizability check (cancelled context, Porcupine timeout on a long history) yields Unknown, never Success.
func TestCheckUnknown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res := Check(ctx, cleanHistory(), strictOptions()); res.Verdict != Unknown {
		t.Fatalf("cancelled: verdict %s", res.Verdict)
	}

	h := &History{}
	for i := range 3000 {
		t0 := int64(i) * sec
		h.Ops = append(h.Ops, Op{ClientID: i % 4,
			Input:  models.LockInput{Op: models.Status, Resource: "r"},
			Output: models.LockOutput{LogTimeNs: t0}, Call: t0, Return: t0 + ms})
	}
	res := Check(context.Background(), h, Options{LinearizabilityTimeout: time.Nanosecond})
	if res.Verdict != Unknown || res.Stats.Linearizability != "Unknown" {
		t.Fatalf("timeout: verdict %s, linearizability %q", res.Verdict, res.Stats.Linearizability)
	}
}

// TestReplayBatching replays queues with shared batches, an S overtaking an X and a barging request, and counts the inversions.
func TestReplayBatching(t *testing.T) {
	enq := func(i uint64, client, mode string) TraceEvent {
		return TraceEvent{Index: i, LogTime: int64(i) * sec, Kind: KindEnqueue, Resource: "r", Client: client, Mode: mode}
	}
	grant := func(i uint64, client string) TraceEvent {
		return TraceEvent{Index: i, LogTime: int64(i) * sec, Kind: KindGrant, Resource: "r", Client: client, LeaseID: "L-" + client}
	}
	base := []TraceEvent{enq(1, "a", models.Shared), enq(2, "b", models.Shared), enq(3, "c", models.Exclusive), enq(4, "d", models.Shared)}
	cases := []struct {
		name       string
		grants     []TraceEvent
		inversions int
	}{
		{"shared batch then exclusive then shared", []TraceEvent{grant(5, "b"), grant(5, "a"), grant(6, "c"), grant(7, "d")}, 0},
		{"shared overtakes exclusive", []TraceEvent{grant(5, "a"), grant(5, "b"), grant(5, "d"), grant(6, "c")}, 1},
		{"fresh request barges", []TraceEvent{grant(5, "x"), grant(6, "a"), grant(6, "b"), grant(7, "c"), grant(8, "d")}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := replayQueues(append(slices.Clone(base), tc.grants...))
			got := 0
			for _, g := range r.Grants {
				got += g.Skipped
			}
			if got != tc.inversions {
				t.Fatalf("inversions %d, want %d (%+v)", got, tc.inversions, r.Grants)
			}
		})
	}
}

// TestCheckHerd checks wakeup accounting: one wakeup per resolved waiter passes, extra ones and racers woken by "freed" count as a herd.
func TestCheckHerd(t *testing.T) {
	ev := func(i uint64, kind, lease, mode string) TraceEvent {
		return TraceEvent{Index: i, LogTime: int64(i) * sec, Kind: kind, Resource: "r", LeaseID: lease, Mode: mode, Token: i, ExpiresAt: int64(i+5) * sec}
	}
	trace := []TraceEvent{
		ev(1, KindGrant, "H", models.Exclusive),
		ev(2, KindEnqueue, "A", models.Shared),
		ev(3, KindEnqueue, "B", models.Shared),
		ev(4, KindEnqueue, "C", models.Shared),
		ev(5, KindRelease, "H", ""),
		ev(5, KindGrant, "A", models.Shared),
		ev(5, KindGrant, "B", models.Shared),
		ev(5, KindCancel, "C", ""),
	}
	trace[6].Token = 6 // A and B share index 5, not a token
	one := Wakeup{Resource: "r", Index: 5, Waiters: 1}
	cases := []struct {
		name    string
		wakeups []Wakeup
		extra   []TraceEvent
		excess  int
	}{
		{"one per resolved waiter", []Wakeup{one, one, one}, nil, 0},
		{"fewer wakeups than grants", []Wakeup{one}, nil, 0},
		{"one too many", []Wakeup{one, one, one, one}, nil, 1},
		{"racers woken by freed", []Wakeup{{Resource: "r", Index: 9, Waiters: 4}}, []TraceEvent{ev(9, KindFreed, "", "")}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &History{Trace: append(slices.Clone(trace), tc.extra...), Wakeups: tc.wakeups}
			res := Check(context.Background(), h, Options{})
			if res.Stats.HerdExcess != tc.excess {
				t.Fatalf("excess %d, want %d; violations %v", res.Stats.HerdExcess, tc.excess, res.Violations)
			}
			if failed := res.Verdict == Failure; failed != (tc.excess > 0) || (failed && !slices.Equal(checksOf(t, res), []string{CheckHerd})) {
				t.Fatalf("verdict %s, violations %v", res.Verdict, res.Violations)
			}
		})
	}
}
