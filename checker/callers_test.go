package checker

import (
	"strings"
	"testing"
)

// TestCallers: goal — a hello must cancel every queued request only the
// node's earlier process held, and a request held only by suspected
// members must not be granted; a request some live process also holds (a
// retry joined it) may stay or be granted. Method: small traces with the
// commands that say who holds each request.
func TestCallers(t *testing.T) {
	acquire := func(index uint64, client, rid, lease, host string, inc uint64) Command {
		return Command{Index: index, Op: CommandAcquire, Client: client, RequestID: rid, LeaseID: lease, WaitMs: 5000, Host: host, Incarnation: inc}
	}
	enqueue := func(index uint64, client, lease string) TraceEvent {
		return TraceEvent{Index: index, Kind: KindEnqueue, Resource: "r", Client: client, LeaseID: lease}
	}
	hello := Command{Index: 10, Op: CommandHello, Host: "n1", Incarnation: 2}
	base := []Command{acquire(1, "c1", "q1", "L1", "n1", 1), acquire(2, "c2", "q2", "L2", "n1", 1)}
	queued := []TraceEvent{enqueue(1, "c1", "L1"), enqueue(2, "c2", "L2")}
	for _, tc := range []struct {
		name  string
		cmds  []Command
		trace []TraceEvent
		want  []string
	}{
		{"hello cancels both", append(base, hello),
			append(queued, TraceEvent{Index: 10, Kind: KindCancel, Resource: "r", LeaseID: "L1"}, TraceEvent{Index: 10, Kind: KindCancel, Resource: "r", LeaseID: "L2"}), nil},
		{"hello skips one", append(base, hello),
			append(queued, TraceEvent{Index: 10, Kind: KindCancel, Resource: "r", LeaseID: "L1"}), []string{"left c2's request L2"}},
		{"a retry on another node keeps it", append(base, acquire(3, "c2", "q2", "L9", "n2", 1), hello),
			append(queued, TraceEvent{Index: 10, Kind: KindCancel, Resource: "r", LeaseID: "L1"}), nil},
		{"the same process says hello again", append(base, Command{Index: 10, Op: CommandHello, Host: "n1", Incarnation: 1}), queued, nil},
		{"granted while its node is suspected", append(base, Command{Index: 7, Op: "release", Suspects: []string{"n1"}}),
			append(queued, TraceEvent{Index: 7, Kind: KindGrant, Resource: "r", Client: "c1", LeaseID: "L1", Hosts: []string{"n1"}}), []string{"granted c1's queued request L1"}},
		{"granted while another node is suspected", append(base, Command{Index: 7, Op: "release", Suspects: []string{"n3"}}),
			append(queued, TraceEvent{Index: 7, Kind: KindGrant, Resource: "r", Client: "c1", LeaseID: "L1", Hosts: []string{"n1"}}), nil},
		{"granted with a live attempt too", append(base, Command{Index: 7, Op: "release", Suspects: []string{"n1"}}),
			append(queued, TraceEvent{Index: 7, Kind: KindGrant, Resource: "r", Client: "c1", LeaseID: "L1", Hosts: []string{"n1", "n2"}}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f findings
			checkCallers(&History{Commands: tc.cmds}, sortedTrace(tc.trace), &f)
			wantFindings(t, &f, tc.want)
		})
	}
}

// TestPanicsAreViolations: goal — a recovered server panic fails the run
// and names where it was raised. Method: a history with one panic.
func TestPanicsAreViolations(t *testing.T) {
	stack := "goroutine 7 [running]:\nruntime/debug.Stack()\n\t/go/debug/stack.go:26 +0x5e\npanic({0x1, 0x2})\n\t/go/runtime/panic.go:783 +0x132\n" +
		"github.com/lockstep/lockstep/core/lock.(*State).promote(...)\n\t/src/core/lock/state.go:572 +0x1f\n"
	h := &History{Panics: []Panic{{Node: "s1n2", Where: "apply", Index: 9, Value: "lock: lost a queue entry", Stack: stack}}}
	res := Check(t.Context(), h, Options{})
	if res.Verdict != Failure || len(res.Violations) != 1 || res.Violations[0].Check != CheckPanic {
		t.Fatalf("verdict %s %v, want one panic violation", res.Verdict, res.Violations)
	}
	if m := res.Violations[0].Message; !strings.Contains(m, "core/lock/state.go:572") || !strings.Contains(m, "index 9") {
		t.Errorf("message %q does not say where", m)
	}
}

// wantFindings asserts that f holds exactly one violation per want, in
// order, each message containing its want.
func wantFindings(t *testing.T, f *findings, want []string) {
	t.Helper()
	if len(f.list) != len(want) {
		t.Fatalf("%d violations %v, want %d", len(f.list), f.list, len(want))
	}
	for i, w := range want {
		if !strings.Contains(f.list[i].Message, w) {
			t.Errorf("violation %q does not say %q", f.list[i].Message, w)
		}
	}
}
