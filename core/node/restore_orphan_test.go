package node

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/raftadapter"
)

// TestRestoredOrphanReleased: goal — a restarted process that catches up
// by installing a snapshot (applying none of the entries it covers) still
// releases a grant made to its node's earlier process in an entry that
// process never stored, and only such a grant. Method: a state where W,
// queued by n2's process 3, is granted at index 4 of term 2; an FSM wired
// to n2's process 5 restores its snapshot. It must queue OpOrphan for W
// when n2's stores held only index 1-3, or index 4 of another term; not
// when they held index 4 of term 2 (W's grant: it may have been delivered)
// nor when they were empty (nothing says what was delivered).
func TestRestoredOrphanReleased(t *testing.T) {
	src, err := lock.New(lock.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	cmds := []lock.Command{
		{Op: lock.OpAcquire, Resource: "r", ClientID: "A", Mode: lock.Exclusive, TTLMs: 60000, LeaseID: lock.LeaseID{1}},
		{Op: lock.OpAcquire, Resource: "r", ClientID: "W", Mode: lock.Exclusive, TTLMs: 60000, WaitMs: 60000,
			LeaseID: lock.LeaseID{2}, Host: "n2", Incarnation: 3},
		{Op: lock.OpTick},
		{Op: lock.OpRelease, Resource: "r", LeaseID: lock.LeaseID{1}},
	}
	for i, c := range cmds {
		c.Mono = int64(i+1) * int64(time.Millisecond)
		if res, _ := src.Apply(lock.Entry{Index: uint64(i + 1), Term: 2, Command: c}); res.Code != lock.OK {
			t.Fatalf("entry %d: %+v", i+1, res)
		}
	}
	if st := src.Status("r"); len(st.Holders) != 1 || st.Holders[0].ClientID != "W" {
		t.Fatalf("W is not holding: %+v", st)
	}
	snap := src.Snapshot()
	cases := []struct {
		name       string
		last, term uint64 // n2's stores held entries 1..last, all of term
		want       bool
	}{
		{"grant never stored", 3, 2, true},
		{"another term's entry stored at the grant's index", 4, 1, true},
		{"grant stored", 4, 2, false},
		{"empty disk", 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := &Node{cfg: Config{ID: "n2"}, incarnation: 5, stored: storedLog(t, tc.last, tc.term), releases: make(chan lock.Command, 4)}
			f, err := newFSM(lock.DefaultConfig(), newNotifier(nil), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.restored = n.noticeRestoredOrphans
			if err := f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
				t.Fatal(err)
			}
			var got []lock.Command
			for len(n.releases) > 0 {
				got = append(got, <-n.releases)
			}
			released := len(got) == 1 && got[0].Op == lock.OpOrphan && got[0].LeaseID == (lock.LeaseID{2}) &&
				got[0].Host == "n2" && got[0].Incarnation == 5
			if released != tc.want || (!tc.want && len(got) > 0) {
				t.Fatalf("queued %+v; want an orphan release of W: %v", got, tc.want)
			}
		})
	}
}

// storedLog is what a process finds in stores holding entries 1..last, all
// of term (none when last is 0).
func storedLog(t *testing.T, last, term uint64) raftadapter.StoredLog {
	t.Helper()
	st := raftadapter.NewMemStores()
	for i := uint64(1); i <= last; i++ {
		if err := st.Log.StoreLog(&raft.Log{Index: i, Term: term, Type: raft.LogCommand}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := raftadapter.ReadStoredLog(st)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
