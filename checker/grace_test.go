package checker

import (
	"testing"
	"time"
)

// TestGraceTraceChecks: goal — the trace checks know grace windows: a
// lease with grace keeps its resource until expiry+grace (another
// exclusive grant in the window overlaps it; one after it does not; a
// revive in the window ends the old span and opens a new one), and its
// expire must come when the window ends, neither before nor late. Method:
// hand-built traces of lease L (expiry 100ms, grace 50ms) and M.
func TestGraceTraceChecks(t *testing.T) {
	ev := func(i uint64, at int64, kind, lease string, expires int64) TraceEvent {
		e := TraceEvent{Index: i, LogTime: at, Kind: kind, Resource: "r", LeaseID: lease, Mode: "exclusive", ExpiresAt: expires}
		if lease == "L" {
			e.Grace = 50 * msNs
		}
		return e
	}
	grantL := ev(1, 0, KindGrant, "L", 100*msNs)
	grace := ev(2, 100*msNs, KindGrace, "L", 100*msNs)
	overlaps := []struct {
		name  string
		trace []TraceEvent
		want  int
	}{
		{"grant after the window", []TraceEvent{grantL, grace, ev(3, 150*msNs, KindExpire, "L", 100*msNs),
			ev(3, 150*msNs, KindGrant, "M", 250*msNs)}, 0},
		{"grant in the window", []TraceEvent{grantL, grace, ev(3, 120*msNs, KindGrant, "M", 220*msNs)}, 1},
		{"revive, then grant after the new window", []TraceEvent{grantL, grace, ev(3, 120*msNs, KindRevive, "L", 220*msNs),
			ev(4, 270*msNs, KindExpire, "L", 220*msNs), ev(4, 270*msNs, KindGrant, "M", 370*msNs)}, 0},
		{"revive, then grant in the new window", []TraceEvent{grantL, grace, ev(3, 120*msNs, KindRevive, "L", 220*msNs),
			ev(4, 230*msNs, KindGrant, "M", 330*msNs)}, 1},
	}
	for _, tc := range overlaps {
		var f findings
		checkOverlaps(leaseSegments(tc.trace), &f)
		if len(f.list) != tc.want {
			t.Errorf("overlaps, %s: %d violations %v, want %d", tc.name, len(f.list), f.list, tc.want)
		}
	}

	entries := func(times ...int64) []Entry {
		out := []Entry{{Index: 1, LogTime: 0, At: 0}}
		for i, at := range times {
			out = append(out, Entry{Index: uint64(i + 2), LogTime: at, At: at})
		}
		return out
	}
	expiries := []struct {
		name    string
		trace   []TraceEvent
		entries []Entry
		want    int
	}{
		{"expired when the window ends", []TraceEvent{grantL, grace, ev(3, 150*msNs, KindExpire, "L", 100*msNs)},
			entries(100*msNs, 150*msNs), 0},
		{"expired at its ttl, window ignored", []TraceEvent{grantL, ev(2, 100*msNs, KindExpire, "L", 100*msNs)},
			entries(100*msNs, 150*msNs), 1},
		{"still held after the window", []TraceEvent{grantL, grace, ev(4, 200*msNs, KindExpire, "L", 100*msNs)},
			entries(100*msNs, 150*msNs, 200*msNs), 1},
	}
	for _, tc := range expiries {
		var f findings
		checkExpiry(&History{Entries: tc.entries}, tc.trace, Options{ExpiryBound: 200 * time.Millisecond}, &f)
		if len(f.list) != tc.want {
			t.Errorf("expiry, %s: %d violations %v, want %d", tc.name, len(f.list), f.list, tc.want)
		}
	}
}
