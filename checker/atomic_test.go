package checker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

// multiTrace runs a multi request through the real state machine: it
// queues on p and q behind a holder of q, and is granted both when that
// holder releases. The events become the committed trace, as a recorder
// would write them.
func multiTrace(t *testing.T) []TraceEvent {
	t.Helper()
	s, err := lock.New(lock.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	id := func(b byte) lock.LeaseID { return lock.LeaseID{b, 1} }
	cmds := []lock.Command{
		{Op: lock.OpAcquire, Resource: "q", ClientID: "a", LeaseID: id('a'), Mode: lock.Exclusive, TTLMs: 1000},
		{Op: lock.OpAcquireMany, Resources: []string{"p", "q"}, ClientID: "m", LeaseID: id('m'), Mode: lock.Exclusive, TTLMs: 1000, WaitMs: 500},
		{Op: lock.OpAcquire, Resource: "p", ClientID: "c", LeaseID: id('c'), Mode: lock.Exclusive, TTLMs: 1000, WaitMs: 500},
		{Op: lock.OpRelease, Resource: "q", LeaseID: id('a')},
	}
	var trace []TraceEvent
	for i, c := range cmds {
		c.Mono = int64(i) * int64(time.Millisecond)
		_, events := s.Apply(lock.Entry{Index: uint64(i + 1), Term: 1, Command: c})
		for _, ev := range events {
			te := TraceEvent{Index: ev.Index, LogTime: ev.LogTime, Kind: ev.Kind.String(), Resource: ev.Resource,
				LeaseID: ev.Lease.ID.String(), Client: ev.Lease.ClientID, Mode: ev.Lease.Mode.String(),
				Token: ev.Lease.Token, ExpiresAt: ev.Lease.ExpiresAt}
			if ev.ManySize > 0 {
				te.Many, te.ManySize = ev.Many.String(), ev.ManySize
			}
			trace = append(trace, te)
		}
	}
	return trace
}

func atomicViolations(trace []TraceEvent) []string {
	var f findings
	checkAtomic(trace, &f)
	checkQueueProgress(trace, &f)
	var out []string
	for _, v := range f.list {
		out = append(out, v.Message)
	}
	return out
}

// TestAtomicCheck: goal — the atomic check passes the trace the state
// machine writes for a multi request, and fails each broken variant: a
// grant moved to a later index, a grant missing, an enqueue split across
// indexes. Method: a real trace (multiTrace), then edits of it.
func TestAtomicCheck(t *testing.T) {
	good := multiTrace(t)
	if v := atomicViolations(good); len(v) != 0 {
		t.Fatalf("correct trace: %q", v)
	}
	isGrant := func(ev TraceEvent) bool { return ev.Kind == KindGrant && ev.Many != "" }
	isEnqueue := func(ev TraceEvent) bool { return ev.Kind == KindEnqueue && ev.Many != "" }
	if n := len(slices.DeleteFunc(slices.Clone(good), func(ev TraceEvent) bool { return !isGrant(ev) })); n != 2 {
		t.Fatalf("trace has %d multi grants, want 2: %+v", n, good)
	}
	lastOf := func(trace []TraceEvent, match func(TraceEvent) bool) int {
		i := len(trace) - 1
		for !match(trace[i]) {
			i--
		}
		return i
	}
	cases := map[string]struct {
		edit func([]TraceEvent) []TraceEvent
		want string
	}{
		"grant at a later index": {func(tr []TraceEvent) []TraceEvent {
			tr[lastOf(tr, isGrant)].Index++
			return tr
		}, "grant on \"p\" at index 4, on \"q\" at index 5"},
		"partial grant": {func(tr []TraceEvent) []TraceEvent {
			i := lastOf(tr, isGrant)
			return slices.Delete(tr, i, i+1)
		}, "grant on 1 of its 2 resources"},
		"enqueue split": {func(tr []TraceEvent) []TraceEvent {
			tr[lastOf(tr, isEnqueue)].Index = 9
			return tr
		}, "enqueue on \"p\" at index 2, on \"q\" at index 9"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := atomicViolations(tc.edit(slices.Clone(good)))
			if !slices.ContainsFunc(v, func(m string) bool { return strings.HasPrefix(m, CheckAtomic+":") && strings.Contains(m, tc.want) }) {
				t.Fatalf("violations %q, want an atomic one with %q", v, tc.want)
			}
		})
	}
}
