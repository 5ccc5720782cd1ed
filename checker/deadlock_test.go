package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/models"
)

// deadlockTrace: A holds x, B holds y, A waits for y (until 5s); then,
// with closeCycle, B waits for x too (queued: the cycle forms), else B's
// wait for x is refused (the command at index 4 changes nothing). At 3s
// B's wait is cancelled.
func deadlockTrace(closeCycle bool) *History {
	ms := func(v int64) int64 { return v * int64(time.Millisecond) }
	h := &History{
		Trace: []TraceEvent{
			{Index: 1, LogTime: 0, Kind: KindGrant, Resource: "x", LeaseID: "a", Client: "A", Mode: "exclusive"},
			{Index: 2, LogTime: 0, Kind: KindGrant, Resource: "y", LeaseID: "b", Client: "B", Mode: "exclusive"},
			{Index: 3, LogTime: ms(10), Kind: KindEnqueue, Resource: "y", LeaseID: "c", Client: "A", Mode: "exclusive", ExpiresAt: ms(5000)},
		},
		Commands: []Command{{Index: 4, Op: CommandAcquire, Client: "B", RequestID: "b-2", LeaseID: "d", WaitMs: 4000}},
		Entries:  []Entry{{Index: 4, LogTime: ms(20)}},
	}
	if closeCycle {
		h.Trace = append(h.Trace,
			TraceEvent{Index: 4, LogTime: ms(20), Kind: KindEnqueue, Resource: "x", LeaseID: "d", Client: "B", Mode: "exclusive", ExpiresAt: ms(4020)},
			TraceEvent{Index: 5, LogTime: ms(3000), Kind: KindCancel, Resource: "x", LeaseID: "d", Client: "B", Mode: "exclusive"})
	}
	return h
}

func refusedOp(cycle ...string) Op {
	return Op{Input: models.LockInput{Op: models.Acquire, Resource: "x", ClientID: "B", Wait: true, RequestID: "b-2"},
		Output: models.LockOutput{Code: models.CodeDeadlock, Cycle: cycle}}
}

// TestCheckDeadlock: goal — the deadlock check passes a refusal whose
// cycle existed where it was refused, flags one naming a cycle that did not
// exist, and flags a cycle left standing past the bound (deadlock-miss).
// Method: small hand-made traces.
func TestCheckDeadlock(t *testing.T) {
	opts := Options{DeadlockBound: time.Second}
	cases := []struct {
		name  string
		h     *History
		ops   []Op
		wants string // "" for no violation
	}{
		{name: "refused in a real cycle", h: deadlockTrace(false), ops: []Op{refusedOp("B", "A")}},
		{name: "refused naming a client that does not wait", h: deadlockTrace(false), ops: []Op{refusedOp("B", "C")},
			wants: "did not exist where it was refused"},
		{name: "cycle not starting with the requester", h: deadlockTrace(false), ops: []Op{refusedOp("A", "B")},
			wants: "does not start with it"},
		{name: "cycle left standing", h: deadlockTrace(true), wants: "stood from log time 20ms until log time 3s"},
		{name: "cycle within the bound", h: func() *History {
			h := deadlockTrace(true)
			h.Trace[len(h.Trace)-1].LogTime = int64(500 * time.Millisecond)
			return h
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.h.Ops = c.ops
			var f findings
			judged := checkDeadlock(c.h, sortedTrace(c.h.Trace), opts, &f)
			if len(c.ops) > 0 && judged != len(c.ops) {
				t.Errorf("judged %d of %d deadlock answers", judged, len(c.ops))
			}
			switch {
			case c.wants == "" && len(f.list) > 0:
				t.Errorf("violations %v, want none", f.list)
			case c.wants != "" && (len(f.list) != 1 || !strings.Contains(f.list[0].Message, c.wants)):
				t.Errorf("violations %v, want one saying %q", f.list, c.wants)
			}
		})
	}
}

// crossTrace: A holds x in group 1 and waits for y in group 2; B holds y
// and waits for x: a cycle neither group holds whole, formed at 1s; A lets
// x go at 4s. With cancelAt > 0 a detector's cancel removes B's wait then,
// naming client cancelled.
func crossTrace(cancelAt int64, cancelled string) *History {
	s := int64(time.Second)
	h := &History{
		Trace: []TraceEvent{
			{Group: 1, Index: 1, Kind: KindGrant, Resource: "x", LeaseID: "a", Client: "A", Mode: "exclusive"},
			{Group: 2, Index: 1, Kind: KindGrant, Resource: "y", LeaseID: "b", Client: "B", Mode: "exclusive"},
			{Group: 2, Index: 2, Kind: KindEnqueue, Resource: "y", LeaseID: "c", Client: "A", Mode: "exclusive", ExpiresAt: 10 * s},
			{Group: 1, Index: 2, Kind: KindEnqueue, Resource: "x", LeaseID: "d", Client: "B", Mode: "exclusive", ExpiresAt: 10 * s},
			{Group: 1, Index: 4, Kind: KindRelease, Resource: "x", LeaseID: "a", Client: "A", Mode: "exclusive"},
		},
		Entries: []Entry{{Group: 1, Index: 1}, {Group: 2, Index: 1}, {Group: 2, Index: 2, At: s / 2}, {Group: 1, Index: 2, At: s},
			{Group: 1, Index: 4, At: 4 * s}},
	}
	if cancelAt > 0 {
		h.Trace = append(h.Trace, TraceEvent{Group: 1, Index: 3, Kind: KindCancel, Resource: "x", LeaseID: "d", Client: cancelled,
			Mode: "exclusive", Deadlock: true})
		h.Entries = append(h.Entries, Entry{Group: 1, Index: 3, At: cancelAt})
	}
	return h
}

// TestCheckCrossDeadlock: goal — the cross-shard half of the deadlock
// check flags a cycle through two groups left standing past the bound
// (deadlock-miss-cross) unless a fault was active, and a detector cancel
// of a client on no cycle; it passes a cancel that broke a standing cycle.
// Method: two groups' traces by hand, placed in virtual time.
func TestCheckCrossDeadlock(t *testing.T) {
	opts := Options{CrossDeadlockBound: 1500 * time.Millisecond}
	cases := []struct {
		name  string
		h     *History
		wants string
	}{
		{name: "cycle left standing", h: crossTrace(0, ""), wants: "stood on a wait-for cycle across groups from 1s to 4s"},
		{name: "cycle standing through a fault", h: func() *History {
			h := crossTrace(0, "")
			h.Faults = []Fault{{Name: "isolateLeader", Start: int64(2 * time.Second), End: int64(3 * time.Second)}}
			return h
		}()},
		{name: "cycle broken by the detector", h: crossTrace(int64(1300*time.Millisecond), "B")},
		{name: "detector cancels a client on no cycle", h: func() *History {
			h := crossTrace(int64(1300*time.Millisecond), "B")
			h.Trace[2].LeaseID, h.Trace[2].Resource = "c", "z" // A waits for z, held by nobody: no cycle
			return h
		}(), wants: "stood on no wait-for cycle"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f findings
			checkDeadlock(c.h, sortedTrace(c.h.Trace), opts, &f)
			switch {
			case c.wants == "" && len(f.list) > 0:
				t.Errorf("violations %v, want none", f.list)
			case c.wants != "" && (len(f.list) == 0 || !strings.Contains(f.list[0].Message, c.wants)):
				t.Errorf("violations %v, want them saying %q", f.list, c.wants)
			}
		})
	}
}
