package checker

import (
	"testing"
	"time"

	"github.com/lockstep/lockstep/models"
)

const msNs = int64(time.Millisecond)

// TestExpiryCheck: goal — a lease must be freed by the first entry past its
// expiry, and in a quiet period that entry must come within ExpiryBound.
// Method: one grant expiring at 100 ms and three entry logs: freed on time,
// still held past the first entry (a missed expiry), and freed by an entry
// 500 ms late with no fault (a missing tick), then the same inside a fault.
func TestExpiryCheck(t *testing.T) {
	grant := TraceEvent{Index: 1, LogTime: 0, Kind: KindGrant, Resource: "r", LeaseID: "L", ExpiresAt: 100 * msNs}
	expireAt := func(i uint64, at int64) TraceEvent {
		return TraceEvent{Index: i, LogTime: at, Kind: KindExpire, Resource: "r", LeaseID: "L"}
	}
	entries := func(times ...int64) []Entry {
		out := []Entry{{Index: 1, LogTime: 0, At: 0}}
		for i, at := range times {
			out = append(out, Entry{Index: uint64(i + 2), LogTime: at, At: at})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		trace   []TraceEvent
		entries []Entry
		faults  []Fault
		want    int
	}{
		{"freed by the first entry past expiry", []TraceEvent{grant, expireAt(3, 120*msNs)}, entries(50*msNs, 120*msNs), nil, 0},
		{"held past the first entry", []TraceEvent{grant, expireAt(4, 200*msNs)}, entries(50*msNs, 120*msNs, 200*msNs), nil, 1},
		{"freed late while quiet", []TraceEvent{grant, expireAt(3, 600*msNs)}, entries(50*msNs, 600*msNs), nil, 1},
		{"freed late during a fault", []TraceEvent{grant, expireAt(3, 600*msNs)}, entries(50*msNs, 600*msNs),
			[]Fault{{Name: "killLeader", Start: 60 * msNs, End: 550 * msNs}}, 0},
	} {
		var f findings
		checkExpiry(&History{Entries: tc.entries, Faults: tc.faults}, tc.trace, Options{ExpiryBound: 200 * time.Millisecond}, &f)
		if len(f.list) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(f.list), f.list, tc.want)
		}
	}
}

// TestQueueCheck: goal — a status reply must list the queue the trace had
// at its log time. Method: two waiters enqueued, one cancelled; replies
// listing the right queue, the cancelled waiter, the wrong order, and one
// too close to a queue change to judge.
func TestQueueCheck(t *testing.T) {
	trace := []TraceEvent{
		{Index: 1, LogTime: 10 * msNs, Kind: KindEnqueue, Resource: "r", LeaseID: "A", Client: "a", Mode: models.Exclusive, ExpiresAt: 900 * msNs},
		{Index: 2, LogTime: 20 * msNs, Kind: KindEnqueue, Resource: "r", LeaseID: "B", Client: "b", Mode: models.Exclusive, ExpiresAt: 900 * msNs},
		{Index: 3, LogTime: 30 * msNs, Kind: KindEnqueue, Resource: "r", LeaseID: "C", Client: "c", Mode: models.Shared, ExpiresAt: 900 * msNs},
		{Index: 4, LogTime: 40 * msNs, Kind: KindCancel, Resource: "r", LeaseID: "B", Client: "b"},
	}
	status := func(at int64, q ...models.WaiterView) Op {
		return Op{Input: models.LockInput{Op: models.Status, Resource: "r"}, Output: models.LockOutput{LogTimeNs: at, Queue: q}}
	}
	a, b, c := models.WaiterView{Client: "a", Mode: models.Exclusive}, models.WaiterView{Client: "b", Mode: models.Exclusive},
		models.WaiterView{Client: "c", Mode: models.Shared}
	for _, tc := range []struct {
		name string
		op   Op
		want int
	}{
		{"right queue", status(60*msNs, a, c), 0},
		{"cancelled waiter listed", status(60*msNs, a, b, c), 1},
		{"order swapped", status(60*msNs, c, a), 1},
		{"too close to a change to judge", status(41*msNs, a, b, c), 0},
		{"before the cancel", status(35*msNs, a, b, c), 0},
	} {
		var f findings
		checkQueues(&History{Ops: []Op{tc.op}}, trace, &f)
		if len(f.list) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(f.list), f.list, tc.want)
		}
	}
}

// TestQueueProgressCheck: goal — a freed lock hands itself on as far as it
// can, and never to a request whose wait ended. Method: a release that
// leaves a waiter queued on a free lock, a shared waiter left behind shared
// holders, a grant past the waiter's deadline, and a correct handoff.
func TestQueueProgressCheck(t *testing.T) {
	x, s := models.Exclusive, models.Shared
	ev := func(i uint64, at int64, kind, lease, mode string, expires int64) TraceEvent {
		return TraceEvent{Index: i, LogTime: at * msNs, Kind: kind, Resource: "r", LeaseID: lease, Client: "c" + lease, Mode: mode, ExpiresAt: expires * msNs}
	}
	for _, tc := range []struct {
		name  string
		trace []TraceEvent
		want  int
	}{
		{"handoff", []TraceEvent{ev(1, 0, KindGrant, "A", x, 100), ev(2, 1, KindEnqueue, "B", x, 500), ev(3, 5, KindRelease, "A", x, 0), ev(3, 5, KindGrant, "B", x, 105)}, 0},
		{"free lock keeps a queue", []TraceEvent{ev(1, 0, KindGrant, "A", x, 100), ev(2, 1, KindEnqueue, "B", x, 500), ev(3, 5, KindRelease, "A", x, 0)}, 1},
		{"shared waiter behind shared holders", []TraceEvent{ev(1, 0, KindGrant, "A", x, 100), ev(2, 1, KindEnqueue, "B", s, 500), ev(3, 2, KindEnqueue, "C", s, 500),
			ev(4, 5, KindRelease, "A", x, 0), ev(4, 5, KindGrant, "B", s, 105)}, 1},
		{"granted past its wait", []TraceEvent{ev(1, 0, KindGrant, "A", x, 100), ev(2, 1, KindEnqueue, "B", x, 50), ev(3, 60, KindRelease, "A", x, 0), ev(3, 60, KindGrant, "B", x, 160)}, 1},
	} {
		var f findings
		checkQueueProgress(tc.trace, &f)
		if len(f.list) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(f.list), f.list, tc.want)
		}
	}
}
