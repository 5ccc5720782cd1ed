package checker

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/models"
)

// TestLivenessOrphanedLease: goal — waiting behind a lease granted to a
// request held only by a process that was killed with the grant's entry in
// its stores (README "Semantics": it lasts its TTL) is not a liveness
// failure, and nothing else is excused. Method: c2 waits 30 s behind such a
// lease, whose entry n1's process (incarnation 7) stored but never applied
// (pass); variants where the stores held only an overwritten entry at the
// grant's index, where the lease outlives its expiry, where another live
// host still holds an attempt, where the process that stored the grant is
// not the one that proposed the attempt (a later or an earlier one), where
// the fault is not a kill and where the restart names no incarnation must
// each still fail; a process killed only after the lease was freed
// excuses nothing (orphanedLeases).
func TestLivenessOrphanedLease(t *testing.T) {
	ms := int64(time.Millisecond)
	base := func() (*History, []TraceEvent) {
		trace := []TraceEvent{
			{Index: 1, LogTime: 0, Kind: KindGrant, Resource: "r", LeaseID: "L0", Client: "c0", Mode: "exclusive", Token: 1, ExpiresAt: 2000 * ms},
			{Index: 2, LogTime: 100 * ms, Kind: KindEnqueue, Resource: "r", LeaseID: "L1", Client: "c1", Mode: "exclusive", ExpiresAt: 60000 * ms},
			{Index: 3, LogTime: 200 * ms, Kind: KindEnqueue, Resource: "r", LeaseID: "L2", Client: "c2", Mode: "exclusive", ExpiresAt: 60000 * ms},
			{Index: 4, LogTime: 1000 * ms, Kind: KindRelease, Resource: "r", LeaseID: "L0", Client: "c0"},
			{Index: 4, LogTime: 1000 * ms, Kind: KindGrant, Resource: "r", LeaseID: "L1", Client: "c1", Mode: "exclusive", Token: 2,
				ExpiresAt: 31000 * ms, Hosts: []string{"n1"}},
			{Index: 9, LogTime: 31000 * ms, Kind: KindExpire, Resource: "r", LeaseID: "L1", Client: "c1"},
			{Index: 9, LogTime: 31000 * ms, Kind: KindGrant, Resource: "r", LeaseID: "L2", Client: "c2", Mode: "exclusive", Token: 3, ExpiresAt: 41000 * ms},
			{Index: 10, LogTime: 41000 * ms, Kind: KindExpire, Resource: "r", LeaseID: "L2", Client: "c2"},
		}
		h := &History{
			Entries: []Entry{{Index: 2, LogTime: 100 * ms, At: 100 * ms}, {Index: 3, LogTime: 200 * ms, At: 200 * ms},
				{Index: 4, LogTime: 1000 * ms, At: 1000 * ms}, {Index: 9, LogTime: 31000 * ms, At: 31000 * ms}},
			Commands: []Command{{Index: 2, Op: CommandAcquire, Client: "c1", LeaseID: "L1", Host: "n1", Incarnation: 7},
				{Index: 3, Op: CommandAcquire, Client: "c2", LeaseID: "L2", Host: "n2", Incarnation: 8}},
			Faults:   []Fault{{Name: "killRandom", Target: "n1", Start: 1500 * ms, End: 4000 * ms}},
			Restarts: []Restart{{Node: "n1", At: 3900 * ms, Incarnation: 7, Applied: 3, Stored: 5, Kept: 4}},
		}
		return h, trace
	}
	cases := []struct {
		name  string
		edit  func(h *History, trace []TraceEvent) []TraceEvent
		fails bool
	}{
		{"killed with the grant stored", func(h *History, tr []TraceEvent) []TraceEvent { return tr }, false},
		{"killed with another entry stored at the grant's index", func(h *History, tr []TraceEvent) []TraceEvent {
			h.Restarts[0].Kept = 3
			return tr
		}, true},
		{"lease outlives its expiry", func(h *History, tr []TraceEvent) []TraceEvent {
			tr[5].LogTime, tr[6].LogTime = 40000*ms, 40000*ms
			tr[7].LogTime = 50000 * ms
			return tr
		}, true},
		{"another host still holds an attempt", func(h *History, tr []TraceEvent) []TraceEvent {
			tr[4].Hosts = []string{"n1", "n3"}
			h.Commands = append(h.Commands, Command{Index: 3, Op: CommandAcquire, Client: "c1", LeaseID: "L1", Host: "n3", Incarnation: 9})
			return tr
		}, true},
		{"the process that stored the grant is a later one", func(h *History, tr []TraceEvent) []TraceEvent {
			h.Faults = append([]Fault{{Name: "killRandom", Target: "n1", Start: 150 * ms, End: 500 * ms}}, h.Faults...)
			h.Restarts = append([]Restart{{Node: "n1", At: 400 * ms, Incarnation: 7, Applied: 2, Stored: 2, Kept: 2}}, h.Restarts...)
			h.Restarts[1].Incarnation = 8
			return tr
		}, true},
		{"the process that stored the grant is an earlier one", func(h *History, tr []TraceEvent) []TraceEvent {
			h.Faults = append([]Fault{{Name: "killRandom", Target: "n1", Start: 150 * ms, End: 500 * ms}}, h.Faults...)
			h.Restarts = append([]Restart{{Node: "n1", At: 400 * ms, Incarnation: 6, Applied: 4, Stored: 4, Kept: 4}}, h.Restarts...)
			h.Restarts[1].Kept = 3
			return tr
		}, true},
		{"no incarnation recorded", func(h *History, tr []TraceEvent) []TraceEvent {
			h.Restarts[0].Incarnation = 0
			h.Commands[0].Incarnation = 0
			return tr
		}, true},
		{"not a kill", func(h *History, tr []TraceEvent) []TraceEvent {
			h.Faults[0].Name = "wipeNode"
			return tr
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, trace := base()
			trace = tc.edit(h, trace)
			wantC2Failure(t, h, trace, tc.fails)
		})
	}
	// A kill after the free excuses nothing. The wait behind the lease then
	// ended before the kill, so before stability, and checkLiveness does not
	// judge it (once stability is read in log time): the rule is pinned on
	// orphanedLeases itself.
	t.Run("killed only after the lease was freed", func(t *testing.T) {
		h, trace := base()
		h.Entries[3].At = 1200 * ms // the entry freeing L1 applied before the kill at 1.5 s
		if spans := orphanedLeases(h, trace)["r"]; len(spans) != 0 {
			t.Fatalf("lease freed before the kill excused: %v", spans)
		}
	})
}

// TestLivenessDirectGrantAnswerLost: goal — waiting behind a grant made at
// once (the lock was free) whose answer was lost with a process that died
// holding its entry (README "Semantics": it is the client's and lasts its
// TTL) is not a liveness failure, and nothing wider is excused. Method: c1's
// acquire (held by the live n2) is taken by the leader n1, which is killed
// with the entry stored before it applies anywhere; the next leader commits
// it as a direct grant; c1's only call ends unknown; c2 waits 30 s behind it
// (pass; the rule before the direct-grant case failed it). Variants where
// c1 was answered, where the killed process's stores held another entry at
// that index, where the kill came only after the entry applied or before
// c1 called, where no call of the request is recorded, where the lease
// outlives its expiry and where the fault is not a kill must each fail.
func TestLivenessDirectGrantAnswerLost(t *testing.T) {
	ms := int64(time.Millisecond)
	base := func() (*History, []TraceEvent) {
		trace := []TraceEvent{
			{Index: 4, LogTime: 1000 * ms, Kind: KindGrant, Resource: "r", LeaseID: "L1", Client: "c1", Mode: "exclusive", Token: 1, ExpiresAt: 31000 * ms},
			{Index: 5, LogTime: 1100 * ms, Kind: KindEnqueue, Resource: "r", LeaseID: "L2", Client: "c2", Mode: "exclusive", ExpiresAt: 60000 * ms},
			{Index: 9, LogTime: 31000 * ms, Kind: KindExpire, Resource: "r", LeaseID: "L1", Client: "c1"},
			{Index: 9, LogTime: 31000 * ms, Kind: KindGrant, Resource: "r", LeaseID: "L2", Client: "c2", Mode: "exclusive", Token: 2, ExpiresAt: 41000 * ms},
			{Index: 10, LogTime: 41000 * ms, Kind: KindExpire, Resource: "r", LeaseID: "L2", Client: "c2"},
		}
		h := &History{
			Ops: []Op{{ClientID: 1, Call: 900 * ms, Return: math.MaxInt64,
				Input:  models.LockInput{Op: models.Acquire, Resource: "r", ClientID: "c1", RequestID: "c1-1", Wait: true},
				Output: models.LockOutput{Unknown: true}}},
			Entries: []Entry{{Index: 4, LogTime: 1000 * ms, At: 2500 * ms}, {Index: 5, LogTime: 1100 * ms, At: 2600 * ms},
				{Index: 9, LogTime: 31000 * ms, At: 32000 * ms}},
			Commands: []Command{{Index: 4, Op: CommandAcquire, Client: "c1", RequestID: "c1-1", LeaseID: "L1", Host: "n2", Incarnation: 7, WaitMs: 10000},
				{Index: 5, Op: CommandAcquire, Client: "c2", RequestID: "c2-1", LeaseID: "L2", Host: "n2", Incarnation: 7, WaitMs: 60000}},
			Faults:   []Fault{{Name: "killLeader", Target: "n1", Start: 950 * ms, End: 4000 * ms}},
			Restarts: []Restart{{Node: "n1", At: 3900 * ms, Incarnation: 5, Applied: 3, Stored: 4, Kept: 4}},
		}
		return h, trace
	}
	cases := []struct {
		name  string
		edit  func(h *History, tr []TraceEvent)
		fails bool
	}{
		{"answer lost with the leader that stored it", func(h *History, tr []TraceEvent) {}, false},
		{"a retry was answered", func(h *History, tr []TraceEvent) {
			h.Ops = append(h.Ops, Op{ClientID: 2, Call: 1200 * ms, Return: 2700 * ms,
				Input:  models.LockInput{Op: models.Acquire, Resource: "r", ClientID: "c1", RequestID: "c1-1", Wait: true},
				Output: models.LockOutput{Granted: true, LeaseID: "L1", Token: 1}})
		}, true},
		{"killed with another entry stored at the index", func(h *History, tr []TraceEvent) { h.Restarts[0].Kept = 3 }, true},
		{"killed only after the entry applied", func(h *History, tr []TraceEvent) { h.Entries[0].At = 940 * ms }, true},
		{"killed before the request was made", func(h *History, tr []TraceEvent) { h.Ops[0].Call = 1000 * ms }, true},
		{"no call of the request recorded", func(h *History, tr []TraceEvent) { h.Ops = nil }, true},
		{"lease outlives its expiry", func(h *History, tr []TraceEvent) {
			tr[2].LogTime, tr[3].LogTime, tr[4].LogTime = 40000*ms, 40000*ms, 50000*ms
		}, true},
		{"not a kill", func(h *History, tr []TraceEvent) { h.Faults[0].Name = "partitionLeader" }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, trace := base()
			tc.edit(h, trace)
			wantC2Failure(t, h, trace, tc.fails)
		})
	}
}

// wantC2Failure checks the liveness verdict on waiter c2 (bound 8 s).
func wantC2Failure(t *testing.T, h *History, trace []TraceEvent, want bool) {
	t.Helper()
	var f findings
	checkLiveness(h, replayQueues(trace), trace, Options{GrantBound: 8 * time.Second}, &f)
	failed := false
	for _, v := range f.list {
		failed = failed || (v.Check == CheckLiveness && strings.Contains(v.Message, "waiter c2"))
	}
	if failed != want {
		t.Fatalf("liveness failed=%v, want %v: %v", failed, want, f.list)
	}
}
