package checker

import (
	"strings"
	"testing"
)

// TestSemaphoreOverlaps: goal — on a semaphore of N, up to N permits may
// overlap in log time and the N+1st live at once is flagged, while a
// plain exclusive lease overlapping a permit still is; permits ending
// exactly when another begins do not overlap.
func TestSemaphoreOverlaps(t *testing.T) {
	grant := func(index uint64, at int64, lease string, permits int) TraceEvent {
		return TraceEvent{Index: index, LogTime: at, Kind: KindGrant, Resource: "r", LeaseID: lease, Mode: "exclusive",
			Token: index, ExpiresAt: at + 10*sec, Permits: permits}
	}
	release := func(index uint64, at int64, lease string) TraceEvent {
		return TraceEvent{Index: index, LogTime: at, Kind: KindRelease, Resource: "r", LeaseID: lease}
	}
	cases := []struct {
		name  string
		trace []TraceEvent
		want  int
	}{
		{"two of two", []TraceEvent{grant(1, 0, "A", 2), grant(2, sec, "B", 2)}, 0},
		{"three of two", []TraceEvent{grant(1, 0, "A", 2), grant(2, sec, "B", 2), grant(3, 2*sec, "C", 2)}, 1},
		{"three of three", []TraceEvent{grant(1, 0, "A", 3), grant(2, sec, "B", 3), grant(3, 2*sec, "C", 3)}, 0},
		{"third after a release", []TraceEvent{grant(1, 0, "A", 2), grant(2, sec, "B", 2), release(3, 2*sec, "A"), grant(4, 2*sec, "C", 2)}, 0},
		{"third after an expiry", []TraceEvent{grant(1, 0, "A", 2), grant(2, sec, "B", 2), grant(3, 10*sec, "C", 2)}, 0},
		{"plain lease beside a permit", []TraceEvent{grant(1, 0, "A", 2), grant(2, sec, "B", 0)}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f findings
			checkOverlaps(leaseSegments(tc.trace), &f)
			if len(f.list) != tc.want {
				t.Fatalf("violations %v, want %d", f.list, tc.want)
			}
			if tc.want > 0 && tc.trace[len(tc.trace)-1].Permits > 1 && !strings.Contains(f.list[0].Message, "permits were live") {
				t.Fatalf("violation %q does not name the permit count", f.list[0].Message)
			}
		})
	}
}

// TestSemaphoreQueueProgress: goal — under strict FIFO a request left
// waiting at the head of a semaphore with a free permit is flagged after
// the release that freed it, and not while every permit is held.
func TestSemaphoreQueueProgress(t *testing.T) {
	ev := func(index uint64, kind, lease string) TraceEvent {
		return TraceEvent{Index: index, LogTime: int64(index) * sec, Kind: kind, Resource: "r", LeaseID: lease,
			Client: lease, Mode: "exclusive", Token: index, ExpiresAt: 100 * sec, Permits: 2}
	}
	full := []TraceEvent{ev(1, KindGrant, "A"), ev(2, KindGrant, "B"), ev(3, KindEnqueue, "C")}
	var f findings
	checkQueueProgress(append(full, ev(4, KindRelease, "A"), ev(4, KindGrant, "C")), &f)
	if len(f.list) != 0 {
		t.Fatalf("head granted the freed permit, yet flagged: %v", f.list)
	}
	checkQueueProgress(append(full, ev(4, KindRelease, "A")), &f)
	if len(f.list) != 1 || !strings.Contains(f.list[0].Message, "permits are free") {
		t.Fatalf("head left waiting beside a free permit: %v, want one violation", f.list)
	}
}
