package checker

import (
	"testing"
)

// TestWaits: goal — a queued request leaves its queue ungranted only once
// every attempt at it is over: a retry that joined with a longer wait keeps
// it queued past the first attempt's cancel, and the hello of the process
// that holds a caller does not end that caller. Method: small traces with
// the commands that say who holds each request and when its waits end.
func TestWaits(t *testing.T) {
	ms := func(v int64) int64 { return v * 1_000_000 }
	acquire := func(index uint64, lease, host string, inc uint64) Command {
		return Command{Index: index, Op: CommandAcquire, Client: "c1", RequestID: "q1", LeaseID: lease, WaitMs: 1000, Host: host, Incarnation: inc}
	}
	cancel := func(index uint64, owner string) Command {
		return Command{Index: index, Op: CommandCancel, LeaseID: "A", Owner: owner}
	}
	ev := func(index uint64, kind string, logTime, expires int64) TraceEvent {
		return TraceEvent{Index: index, LogTime: ms(logTime), Kind: kind, Resource: "r", Client: "c1", LeaseID: "A", ExpiresAt: ms(expires)}
	}
	// A queued at log time 0 until 1000; B joined at 200 until 3200.
	joined := []Command{acquire(1, "A", "n1", 1), acquire(2, "B", "n2", 1)}
	queued := []TraceEvent{ev(1, KindEnqueue, 0, 1000), ev(2, KindJoin, 200, 3200)}
	for _, tc := range []struct {
		name  string
		cmds  []Command
		trace []TraceEvent
		want  []string
	}{
		{"the first attempt's cancel drops the retry's wait", append(joined, cancel(3, "A")),
			append(queued, ev(3, KindCancel, 1000, 0)), []string{"attempt B (node n2) still waited, 2.2s before its wait ended"}},
		{"both attempts gave up", append(joined, cancel(3, "A"), cancel(4, "B")),
			append(queued, ev(4, KindCancel, 1500, 0)), nil},
		{"the longest wait elapsed", append(joined, cancel(3, "A"), Command{Index: 4, Op: "tick"}),
			append(queued, ev(4, KindCancel, 3200, 0)), nil},
		{"a cancel naming the whole request", append(joined, cancel(3, "")),
			append(queued, ev(3, KindCancel, 1000, 0)), nil},
		{"granted", append(joined, cancel(3, "A")),
			append(queued, ev(3, KindGrant, 1000, 0), ev(5, KindCancel, 1100, 0)), nil},
		{"the retry's node is suspected", append(joined, cancel(3, "A"), Command{Index: 4, Op: "release", Suspects: []string{"n2"}}),
			append(queued, ev(4, KindCancel, 1100, 0)), nil},
		{"another node is suspected", append(joined, cancel(3, "A"), Command{Index: 4, Op: "release", Suspects: []string{"n3"}}),
			append(queued, ev(4, KindCancel, 1100, 0)), []string{"attempt B"}},
		{"a hello of the retry's node's next process", append(joined, cancel(3, "A"), Command{Index: 4, Op: CommandHello, Host: "n2", Incarnation: 2}),
			append(queued, ev(4, KindCancel, 1100, 0)), nil},
		{"the hello of the retry's own process", append(joined, cancel(3, "A"), Command{Index: 4, Op: CommandHello, Host: "n2", Incarnation: 1}),
			append(queued, ev(4, KindCancel, 1100, 0)), []string{"attempt B (node n2) still waited"}},
		{"a hello cancels a request of the live process", []Command{acquire(1, "A", "n1", 5), {Index: 2, Op: CommandHello, Host: "n1", Incarnation: 5}},
			[]TraceEvent{ev(1, KindEnqueue, 0, 1000), ev(2, KindCancel, 10, 0)}, []string{"attempt A (node n1) still waited"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f findings
			checkWaits(&History{Commands: tc.cmds}, sortedTrace(tc.trace), &f)
			wantFindings(t, &f, tc.want)
		})
	}
}
