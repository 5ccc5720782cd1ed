package checker

import (
	"strings"
	"testing"
	"time"
)

// TestLivenessHorizonPerGroup: goal — an unfreed lease is judged against
// its own Raft group's log time, not another group's. Method: two groups;
// group 0's trace ends before the lease's deadline while group 1's runs
// past it (no violation); then group 0 itself runs past it (violation).
func TestLivenessHorizonPerGroup(t *testing.T) {
	ms := int64(time.Millisecond)
	grant := TraceEvent{Group: 0, Index: 1, LogTime: 0, Kind: KindGrant, Resource: "a", LeaseID: "L1",
		Client: "c1", Mode: "exclusive", Token: 1, ExpiresAt: 1000 * ms}
	other := func(at int64) TraceEvent {
		return TraceEvent{Group: 1, Index: uint64(at), LogTime: at * ms, Kind: KindGrant, Resource: "b",
			LeaseID: "M", Client: "c2", Mode: "exclusive", Token: 1, ExpiresAt: at*ms + 100_000*ms}
	}
	opts := Options{ElectionBound: 500 * time.Millisecond}
	var f findings
	checkLiveness(&History{}, queueReplay{Horizon: 5000 * ms}, []TraceEvent{grant, other(5000)}, opts, &f)
	if len(f.list) != 0 {
		t.Fatalf("another group's log time judged this lease: %v", f.list)
	}
	tick := TraceEvent{Group: 0, Index: 2, LogTime: 3000 * ms, Kind: KindRenew, Resource: "z", LeaseID: "Z",
		Client: "c3", Mode: "exclusive", Token: 2, ExpiresAt: 9000 * ms}
	f = findings{}
	checkLiveness(&History{}, queueReplay{Horizon: 5000 * ms}, []TraceEvent{grant, tick, other(5000)}, opts, &f)
	if len(f.list) == 0 || !strings.Contains(f.list[0].Message, "never freed") {
		t.Fatalf("lease past its deadline in its own group not flagged: %v", f.list)
	}
}
