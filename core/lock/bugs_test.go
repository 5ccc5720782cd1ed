//go:build lockstep_bugs

package lock

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestBugModesForget: goal — the testbed's in-memory bug modes do forget
// (tokens restart, queues vanish) at a new term and on restore; if they did
// not, the simulator's bug sweeps would measure nothing.
func TestBugModesForget(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Bugs = Bugs{TokenInMemory: true, QueueInMemory: true}
	s := mustNew(t, cfg)
	applyAt(s, 1, 0, acq("r", 'a', X, 1000, 0))
	applyAt(s, 2, 1, acq("r", 'b', X, 1000, 5000))
	applyAt(s, 3, 2, acq("r", 'c', S, 1000, 5000))
	res, _ := s.Apply(Entry{Index: 4, Term: 2, Command: acq("q", 'd', X, 1000, 0)})
	if res.Lease.Token != 1 {
		t.Errorf("token after a new term %d, want 1 (restarted)", res.Lease.Token)
	}
	if st := s.Status("r"); len(st.Queue) != 0 || len(st.Holders) != 1 {
		t.Errorf("status after a new term %s, want the holder only", describeStatus(st))
	}
	checkCounters(t, s, "new term")
}

// TestTokenInMemoryRestoresItsOwnSnapshot: goal — a token-in-memory state
// machine restores the snapshots it writes, holders with tokens above the
// restarted counter included. Its Restore refused them ("breaks the lock
// invariants"), so raft, restarting a node, fell back to an older snapshot
// whose following entries were compacted and panicked "log not found",
// killing a whole locksim -bug-table process (leaderCrash seeds 1, 25).
func TestTokenInMemoryRestoresItsOwnSnapshot(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Bugs = Bugs{TokenInMemory: true}
	s := mustNew(t, cfg)
	applyAt(s, 1, 0, acq("r", 'a', X, 1000, 0))
	applyAt(s, 2, 1, acq("q", 'b', X, 1000, 0))
	// A new term restarts the counter: "p" gets token 1 again, below the 2
	// "q" holds.
	s.Apply(Entry{Index: 3, Term: 2, Command: acq("p", 'c', X, 1000, 0)})
	if m := s.Metrics(); m.LastToken != 1 {
		t.Fatalf("last token after a new term %d, want 1 (restarted)", m.LastToken)
	}
	r := mustNew(t, cfg)
	if err := r.Restore(s.Snapshot()); err != nil {
		t.Fatalf("restore of a token-in-memory snapshot: %v", err)
	}
	if st := r.Status("q"); len(st.Holders) != 1 || st.Holders[0].Token != 2 {
		t.Errorf("restored %q: %s, want its holder with token 2", "q", describeStatus(st))
	}
}

// TestBugModesRestoreTheirSnapshots: goal — under every bug mode, each
// snapshot the state machine writes restores. A bug mode may break the
// lock's guarantees, which the testbed must see from the outside; a replica
// refusing its own snapshot instead makes raft fall back to an older one
// and panic over the compacted log, ending the whole sweep. Method: rapid
// draws a log (new terms included), each prefix's snapshot is restored.
func TestBugModesRestoreTheirSnapshots(t *testing.T) {
	for _, bugs := range []Bugs{{TokenInMemory: true}, {QueueInMemory: true}, {ForgetSettled: true}, {GraceReviveRegranted: true}} {
		cfg := propConfig()
		cfg.Bugs = bugs
		t.Run(fmt.Sprintf("%+v", bugs), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				log := drawLog(t)
				defer func() { logOnFailure(t, log) }() // log as it is at the failure, not as it was here
				s := mustNew(t, cfg)
				for _, e := range log {
					s.Apply(e)
					if err := mustNew(t, cfg).Restore(s.Snapshot()); err != nil {
						t.Fatalf("after index %d: restore of its own snapshot: %v", e.Index, err)
					}
				}
			})
		})
	}
}

// TestPermitOvercountGrantsOneMore: goal — the permit-overcount bug mode
// does grant a semaphore of 2 a third holder, without the state machine
// panicking or refusing its own snapshot: the testbed must catch it from
// the outside.
func TestPermitOvercountGrantsOneMore(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Bugs = Bugs{PermitOvercount: true}
	s := mustNew(t, cfg)
	for i, l := range []byte{'a', 'b', 'c'} {
		if res, _ := applyAt(s, uint64(i+1), 0, sem(acq("r", l, X, 100, 0), 2)); !res.Granted {
			t.Fatalf("permit %d (%c) not granted under the bug: %+v", i+1, l, res)
		}
	}
	if res, _ := applyAt(s, 4, 0, sem(acq("r", 'd', X, 100, 0), 2)); res.Granted {
		t.Fatal("a fourth permit granted: the bug is one too many, not unbounded")
	}
	checkSnapshotRoundTrip(t, s)
}

// TestDeadlockMissQueuesTheCycle: goal — the deadlock-miss bug mode does
// what the simulator's sweep relies on: the request that closes a cycle is
// queued, so the cycle stands until a wait elapses.
func TestDeadlockMissQueuesTheCycle(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Bugs = Bugs{DeadlockMiss: true}
	s := mustNew(t, cfg)
	applyAt(s, 1, 0, acqBy("x", 'a', 'A', X, 0))
	applyAt(s, 2, 0, acqBy("y", 'b', 'B', X, 0))
	applyAt(s, 3, 1, acqBy("y", 'c', 'A', X, 5000))
	res, _ := applyAt(s, 4, 2, acqBy("x", 'd', 'B', X, 5000))
	if !res.Queued {
		t.Fatalf("the request closing the cycle: %s, want queued", dl(OpAcquire, res))
	}
	if c := graphCycle(waitGraph(s)); c == nil {
		t.Fatal("no cycle stands")
	}
}

// TestGraceReviveRegrantedBug: goal — the grace-revive-regranted bug mode
// does what it says (a renew after the window, once another holds the
// lock, is answered as a revive with the old token), and the correct build
// answers not_holder there; otherwise the simulator's sweep of it would
// measure nothing.
func TestGraceReviveRegrantedBug(t *testing.T) {
	for _, bug := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.Bugs.GraceReviveRegranted = bug
		s := mustNew(t, cfg)
		applyAt(s, 1, 0, graced(acq("r", 'a', X, 100, 0), 50))
		applyAt(s, 2, 10, acq("r", 'b', X, 100, 1000))
		applyAt(s, 3, 150, tick()) // the window ends: b is granted
		res, _ := applyAt(s, 4, 160, renew("r", 'a', 0))
		if got := describeResult(OpRenew, res); (got == "renewed a#1@260") != bug || (!bug && got != "not_holder") {
			t.Errorf("bug %v: renew after the window answered %q", bug, got)
		}
	}
}
