package checker

import (
	"testing"

	"github.com/lockstep/lockstep/models"
)

// TestQueueCheckAfterAnAttemptLeft: goal — once one attempt at a queued
// request gave up, the request's deadline is the latest of the attempts
// left, which the trace does not show, so a status leaving it out is not
// judged; without such a cancel it still is. Method: a request enqueued
// until 500 ms and joined by a retry until 900 ms; a status at 600 ms that
// does not list it, with and without a cancel of the retry at 550 ms.
func TestQueueCheckAfterAnAttemptLeft(t *testing.T) {
	trace := []TraceEvent{
		{Index: 1, LogTime: 10 * msNs, Kind: KindEnqueue, Resource: "r", LeaseID: "A", Client: "a", Mode: models.Exclusive, ExpiresAt: 500 * msNs},
		{Index: 2, LogTime: 20 * msNs, Kind: KindJoin, Resource: "r", LeaseID: "A", Client: "a", Mode: models.Exclusive, ExpiresAt: 900 * msNs},
	}
	status := Op{Input: models.LockInput{Op: models.Status, Resource: "r"}, Output: models.LockOutput{LogTimeNs: 600 * msNs}}
	entries := []Entry{{Index: 1, LogTime: 10 * msNs}, {Index: 2, LogTime: 20 * msNs}, {Index: 3, LogTime: 550 * msNs}}
	retryLeft := []Command{{Index: 3, Op: CommandCancel, LeaseID: "A", Owner: "B"}}
	for _, tc := range []struct {
		name string
		cmds []Command
		want int
	}{
		{"the retry gave up", retryLeft, 0},
		{"no attempt gave up", nil, 1},
	} {
		var f findings
		checkQueues(&History{Ops: []Op{status}, Entries: entries, Commands: tc.cmds}, trace, &f)
		if len(f.list) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(f.list), f.list, tc.want)
		}
	}
}
