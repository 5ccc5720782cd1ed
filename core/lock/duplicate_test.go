package lock

import "testing"

// TestDuplicateProposalIsIdempotent: goal — an acquire entry applied twice
// (a forwarded proposal duplicated by the network) creates one holder or one
// waiter, not two. Method: apply the same command twice, compare snapshots.
func TestDuplicateProposalIsIdempotent(t *testing.T) {
	s, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	held := Command{Op: OpAcquire, Resource: "r", ClientID: "a", LeaseID: LeaseID{1}, Mode: Exclusive, TTLMs: 1000}
	queued := Command{Op: OpAcquire, Resource: "r", ClientID: "b", LeaseID: LeaseID{2}, Mode: Exclusive, TTLMs: 1000, WaitMs: 500}
	for i, cmd := range []Command{held, held, queued, queued} {
		res, _ := s.Apply(Entry{Index: uint64(i + 1), Term: 1, Command: cmd})
		if res.Code != OK {
			t.Fatalf("entry %d: code %v", i+1, res.Code)
		}
	}
	st := s.Status("r")
	if len(st.Holders) != 1 || len(st.Queue) != 1 || s.Metrics().LastToken != 1 {
		t.Fatalf("status %+v last token %d, want one holder, one waiter, token 1", st, s.Metrics().LastToken)
	}
}
