//go:build lockstep_bugs

package lock

import (
	"testing"
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
