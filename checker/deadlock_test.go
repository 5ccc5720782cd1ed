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
