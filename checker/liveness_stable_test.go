package checker

import (
	"strings"
	"testing"
	"time"
)

// TestLivenessStableInLogTime: goal — the stability point (last fault end
// plus RecoveryBound, virtual time) is read in each group's log time, so a
// leader clock stepped forward during the faults does not make waits and
// expiries inside the faults count as stable time (multiShard seed 396).
// Method: one group whose leader's clock steps 15 s forward during a fault
// (virtual 1–5 s); a waiter and a lease both end at the entry after the
// step, inside the fault; neither is judged. Then a waiter enqueued after
// stability and never granted is still flagged.
func TestLivenessStableInLogTime(t *testing.T) {
	s := int64(time.Second)
	h := &History{
		Faults: []Fault{{Name: "skewClockLeader", Start: 1 * s, End: 5 * s}},
		Entries: []Entry{
			{Index: 1, LogTime: 0, At: 0},
			{Index: 2, LogTime: 2 * s, At: 2 * s},
			{Index: 3, LogTime: 20 * s, At: 5 * s}, // the step: log time 15 s ahead
			{Index: 4, LogTime: 21 * s, At: 6 * s},
		},
	}
	ev := func(i uint64, logTime int64, kind, lease, client string, expires int64) TraceEvent {
		return TraceEvent{Index: i, LogTime: logTime, Kind: kind, Resource: "a", LeaseID: lease,
			Client: client, Mode: "exclusive", Token: 1, ExpiresAt: expires}
	}
	trace := []TraceEvent{
		ev(2, 2*s, KindGrant, "L", "c1", 3*s),
		ev(2, 2*s, KindEnqueue, "W", "c2", 3*s),
		ev(3, 20*s, KindExpire, "L", "c1", 0),
		ev(3, 20*s, KindCancel, "W", "c2", 0),
	}
	opts := Options{RecoveryBound: time.Second, GrantBound: 8 * time.Second, ElectionBound: 4 * time.Second}
	var f findings
	checkLiveness(h, replayQueues(trace), trace, opts, &f)
	if len(f.list) != 0 {
		t.Fatalf("waits inside the faults judged as stable time: %v", f.list)
	}

	h.Entries = append(h.Entries, Entry{Index: 5, LogTime: 31 * s, At: 16 * s})
	trace = append(trace,
		ev(4, 21*s, KindGrant, "M", "c3", 100*s),
		ev(4, 21*s, KindEnqueue, "V", "c4", 100*s),
		TraceEvent{Index: 5, LogTime: 31 * s, Kind: KindRenew, Resource: "a", LeaseID: "M", Client: "c3",
			Mode: "exclusive", Token: 2, ExpiresAt: 100 * s},
	)
	f = findings{}
	checkLiveness(h, replayQueues(trace), trace, opts, &f)
	if len(f.list) != 1 || !strings.Contains(f.list[0].Message, "c4") {
		t.Fatalf("a waiter stuck 10 s after stability not flagged once: %v", f.list)
	}
}
