package checker

import "testing"

// TestLogTimeOrderPerResource checks that log time is judged per resource: groups interleaved in the trace (unrelated indices and log times) pass, a step backwards on one resource fails.
func TestLogTimeOrderPerResource(t *testing.T) {
	ev := func(index uint64, at int64, resource string) TraceEvent {
		return TraceEvent{Index: index, LogTime: at, Kind: KindEnqueue, Resource: resource}
	}
	cases := []struct {
		name  string
		trace []TraceEvent
		want  int
	}{
		{"two groups interleaved", []TraceEvent{ev(1, 5*sec, "a"), ev(1, sec, "b"), ev(2, 6*sec, "a"), ev(2, 2*sec, "b")}, 0},
		{"equal log times", []TraceEvent{ev(1, sec, "a"), ev(2, sec, "a")}, 0},
		{"backwards on one resource", []TraceEvent{ev(1, 5*sec, "a"), ev(1, sec, "b"), ev(2, 4*sec, "a")}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f findings
			checkLogTimeOrder(tc.trace, &f)
			if len(f.list) != tc.want {
				t.Fatalf("violations %v, want %d", f.list, tc.want)
			}
		})
	}
}

// TestOverlapsResetPerResource: goal — holders of one resource are never
// held against another's, even when the other's first segment is empty.
// Method: r1 held [0,10), r2's first segment empty, then r2 held [5,8).
func TestOverlapsResetPerResource(t *testing.T) {
	segs := []segment{
		{Resource: "r1", Lease: "A", Exclusive: true, Start: 0, End: 10},
		{Resource: "r2", Lease: "B", Exclusive: true, Start: 1, End: 1},
		{Resource: "r2", Lease: "C", Exclusive: true, Start: 5, End: 8},
	}
	var f findings
	checkOverlaps(segs, &f)
	if len(f.list) != 0 {
		t.Fatalf("false overlap across resources: %v", f.list)
	}
}
