package raftadapter

import (
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"
)

// nopFSM keeps no state: the test follows raft's indexes, not the data.
type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                  { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error)  { return nopFSM{}, nil }
func (nopFSM) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (nopFSM) Release()                             {}
func (nopFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	_, err := io.Copy(io.Discard, rc)
	return err
}

// Goal: an old leader that snapshotted and compacted through its commit
// index while holding more uncommitted entries than TrailingLogs catches up
// with the new leader. Without KeepCompactionEdge, hashicorp/raft v1.7.2
// rejects the new leader's AppendEntries at that index (it reads the
// previous entry from the log), the leader walks back and installs its own
// older snapshot, rewinding the follower, which then rejects again: the
// leader re-sends the snapshot forever (under synctest virtual time stands
// still and this test never ends; on a non-monotonic store a later commit
// can also panic applying over the hole). Method: three raw rafts on
// in-memory transports, TrailingLogs 2, manual snapshots.
func TestOldLeaderAheadOfTheNewLeadersSnapshotCatchesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if !oldLeaderCatchesUp(t) {
			t.Fatal("the old leader did not catch up")
		}
	})
}

func oldLeaderCatchesUp(t *testing.T) bool {
	ids := []raft.ServerID{"a", "b", "c"}
	rafts, trans, stop := rawRafts(t, func(int) raft.FSM { return nopFSM{} }, nil)
	defer stop()
	leader := func(except int) int {
		for range 200 {
			for i, r := range rafts {
				if i != except && r.State() == raft.Leader {
					return i
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("no leader")
		return -1
	}
	apply := func(i, n int) {
		for range n {
			if err := rafts[i].Apply([]byte("x"), time.Second).Error(); err != nil {
				t.Fatalf("apply on %s: %v", ids[i], err)
			}
		}
	}
	old := leader(-1)
	apply(old, 7)
	time.Sleep(100 * time.Millisecond) // every replica applies the 7
	// Whichever leads next has a snapshot older than the old leader's
	// will be.
	for i, r := range rafts {
		if i != old {
			if err := r.Snapshot().Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(old, 3)
	time.Sleep(100 * time.Millisecond)
	// Cut the old leader off; it appends entries it cannot commit, then
	// snapshots at its commit index and compacts through it.
	for j := range trans {
		if j != old {
			trans[old].Disconnect(raft.ServerAddress(ids[j]))
			trans[j].Disconnect(raft.ServerAddress(ids[old]))
		}
	}
	for range 5 {
		rafts[old].Apply([]byte("lost"), 0)
	}
	time.Sleep(500 * time.Millisecond) // it steps down; the others elect
	if err := rafts[old].Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	now := leader(old)
	apply(now, 1)
	for j := range trans {
		if j != old {
			trans[old].Connect(raft.ServerAddress(ids[j]), trans[j])
			trans[j].Connect(raft.ServerAddress(ids[old]), trans[old])
		}
	}
	apply(now, 2)
	want := rafts[now].AppliedIndex()
	for range 100 {
		if rafts[old].AppliedIndex() >= want && rafts[old].LastIndex() >= want {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := rafts[old].Stats()
	t.Logf("old leader %s: applied %d, last log %s, snapshot %s; leader %s applied %d, snapshot %s",
		ids[old], rafts[old].AppliedIndex(), st["last_log_index"], st["last_snapshot_index"],
		ids[now], want, rafts[now].Stats()["last_snapshot_index"])
	return false
}
