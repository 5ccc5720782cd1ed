package raftadapter

import (
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"
)

func entries(from, to, term uint64) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: term})
	}
	return out
}

// TestAnchorAtFollowerEnd: goal — a rejected AppendEntries is re-anchored
// only at an entry it carries, at the follower's last index, and never
// after a rejection for a newer term.
func TestAnchorAtFollowerEnd(t *testing.T) {
	args := &raft.AppendEntriesRequest{Term: 4, PrevLogEntry: 61, PrevLogTerm: 3, Entries: entries(62, 107, 4), LeaderCommitIndex: 100}
	cases := []struct {
		name     string
		resp     raft.AppendEntriesResponse
		ok       bool
		prev     uint64
		nEntries int
	}{
		{"follower ends inside the entries", raft.AppendEntriesResponse{Term: 4, LastLog: 101}, true, 101, 6},
		{"follower ends at the last entry", raft.AppendEntriesResponse{Term: 4, LastLog: 107}, true, 107, 0},
		{"follower ends past the entries", raft.AppendEntriesResponse{Term: 4, LastLog: 110}, false, 0, 0},
		{"follower ends at the previous entry", raft.AppendEntriesResponse{Term: 4, LastLog: 61}, false, 0, 0},
		{"follower ends before it", raft.AppendEntriesResponse{Term: 4, LastLog: 40}, false, 0, 0},
		{"newer term", raft.AppendEntriesResponse{Term: 5, LastLog: 101}, false, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, ok := anchorAtFollowerEnd(args, &c.resp)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v", ok, c.ok)
			}
			if !ok {
				return
			}
			if a.PrevLogEntry != c.prev || a.PrevLogTerm != 4 || len(a.Entries) != c.nEntries ||
				a.Term != args.Term || a.LeaderCommitIndex != args.LeaderCommitIndex {
				t.Errorf("anchored %+v", a)
			}
			if c.nEntries > 0 && a.Entries[0].Index != c.prev+1 {
				t.Errorf("first entry %d, want %d", a.Entries[0].Index, c.prev+1)
			}
			if args.PrevLogEntry != 61 || len(args.Entries) != 46 {
				t.Error("the original request changed")
			}
		})
	}
}

// scriptedAppends answers AppendEntries from a script, recording requests.
type scriptedAppends struct {
	raft.Transport
	answers []scriptedAnswer
	sent    []raft.AppendEntriesRequest
}

type scriptedAnswer struct {
	resp raft.AppendEntriesResponse
	err  error
}

func (s *scriptedAppends) AppendEntries(_ raft.ServerID, _ raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	s.sent = append(s.sent, *args)
	a := s.answers[0]
	s.answers = s.answers[1:]
	*resp = a.resp
	return a.err
}

// TestGroupTransportAnchorsRejectedAppends: goal — the wrapper resends a
// rejected AppendEntries once, anchored, reports the anchored answer when
// it succeeds and the first rejection otherwise, and passes errors and
// successes through untouched.
func TestGroupTransportAnchorsRejectedAppends(t *testing.T) {
	args := &raft.AppendEntriesRequest{Term: 4, PrevLogEntry: 61, Entries: entries(62, 107, 4)}
	reject := raft.AppendEntriesResponse{Term: 4, LastLog: 101}
	accept := raft.AppendEntriesResponse{Term: 4, LastLog: 107, Success: true}
	lost := errors.New("lost")
	cases := []struct {
		name    string
		answers []scriptedAnswer
		sends   int
		want    raft.AppendEntriesResponse
		wantErr error
	}{
		{"accepted", []scriptedAnswer{{resp: accept}}, 1, accept, nil},
		{"error", []scriptedAnswer{{err: lost}}, 1, raft.AppendEntriesResponse{}, lost},
		{"rejected, anchored accepted", []scriptedAnswer{{resp: reject}, {resp: accept}}, 2, accept, nil},
		{"rejected, anchored rejected", []scriptedAnswer{{resp: reject}, {resp: raft.AppendEntriesResponse{Term: 4, LastLog: 101}}}, 2, reject, nil},
		{"rejected, anchored lost", []scriptedAnswer{{resp: reject}, {err: lost}}, 2, reject, nil},
		{"rejected for a newer term", []scriptedAnswer{{resp: raft.AppendEntriesResponse{Term: 5, LastLog: 101}}}, 1, raft.AppendEntriesResponse{Term: 5, LastLog: 101}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &scriptedAppends{answers: c.answers}
			var resp raft.AppendEntriesResponse
			err := GroupTransport(s, 0).AppendEntries("f", "f", args, &resp)
			if !errors.Is(err, c.wantErr) || resp.Term != c.want.Term || resp.LastLog != c.want.LastLog || resp.Success != c.want.Success || len(s.sent) != c.sends {
				t.Fatalf("err %v resp %+v after %d sends; want %v %+v after %d", err, resp, len(s.sent), c.wantErr, c.want, c.sends)
			}
			if c.sends == 2 && (s.sent[1].PrevLogEntry != 101 || len(s.sent[1].Entries) != 6) {
				t.Errorf("anchored send %+v", s.sent[1])
			}
		})
	}
}

// restoreCounter is a nopFSM that counts snapshot restores.
type restoreCounter struct {
	nopFSM
	restores atomic.Int32
}

func (f *restoreCounter) Restore(rc io.ReadCloser) error {
	f.restores.Add(1)
	return f.nopFSM.Restore(rc)
}

// ackLoss delivers AppendEntries with entries to target but, while armed,
// tells the leader they failed, as when every answer is lost. Each call
// takes a millisecond, so virtual time moves while raft retries.
type ackLoss struct {
	raft.Transport
	target raft.ServerAddress
	armed  *atomic.Bool
}

func (t ackLoss) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	time.Sleep(time.Millisecond)
	err := t.Transport.AppendEntries(id, target, args, resp)
	if err == nil && target == t.target && len(args.Entries) > 0 && t.armed.Load() {
		return errors.New("answer lost")
	}
	return err
}

func (t ackLoss) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// TestFollowerCompactedPastLostAcksCatchesUp: goal — a follower whose
// answers to accepted AppendEntries were lost, and which then snapshotted
// and compacted its log past the leader's idea of its next index, catches
// up from the leader's log without any snapshot. Without the anchoring,
// the follower rejects the resent requests (their previous entry is gone),
// the leader walks its next index down to 1 and the follower never
// catches up (with a leader snapshot below the follower's state, raft
// installed it and rewound the follower: networkPartition seed 20).
// Method: three raw rafts on in-memory transports, TrailingLogs 2, manual
// snapshots, the leader's answers from the follower dropped for a while.
func TestFollowerCompactedPastLostAcksCatchesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { followerCompactedPastLostAcks(t, true) })
}

func followerCompactedPastLostAcks(t *testing.T, anchor bool) {
	armed := new(atomic.Bool)
	fsms := []*restoreCounter{{}, {}, {}}
	rafts, _, stop := rawRafts(t, func(i int) raft.FSM { return fsms[i] }, func(_ int, tr raft.Transport) raft.Transport {
		// Every node drops its answers from c, so whichever leads, c is
		// the follower whose acks are lost.
		tr = ackLoss{Transport: tr, target: "c", armed: armed}
		if anchor {
			tr = GroupTransport(tr, 0)
		}
		return tr
	})
	defer stop()
	const f = 2 // c
	var lead int
	for lead = -1; lead < 0; time.Sleep(20 * time.Millisecond) {
		for i, r := range rafts {
			if i != f && r.State() == raft.Leader {
				lead = i
			}
		}
		if rafts[f].State() == raft.Leader {
			_ = rafts[f].LeadershipTransfer().Error()
		}
	}
	apply := func(n int) {
		for range n {
			if err := rafts[lead].Apply([]byte("x"), time.Second).Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	caughtUp := func(within time.Duration) bool {
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if rafts[f].AppliedIndex() >= rafts[lead].AppliedIndex() {
				return true
			}
		}
		return false
	}
	apply(3)
	if !caughtUp(time.Second) {
		t.Fatal("c did not follow before the acks were lost")
	}
	armed.Store(true)
	apply(6) // committed by the other two; c stores and applies them from the resends
	if !caughtUp(5 * time.Second) {
		t.Fatal("c did not apply the entries whose acks were lost")
	}
	if err := rafts[f].Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	armed.Store(false)
	apply(2)
	if !caughtUp(5 * time.Second) {
		st := rafts[f].Stats()
		t.Fatalf("c did not catch up: applied %d (snapshot %s, last log %s), leader applied %d",
			rafts[f].AppliedIndex(), st["last_snapshot_index"], st["last_log_index"], rafts[lead].AppliedIndex())
	}
	if n := fsms[f].restores.Load(); n != 0 {
		t.Errorf("c restored %d snapshots; it should have caught up from the log", n)
	}
}
