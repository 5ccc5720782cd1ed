package checker

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestFencedStoreWrite replays writes one by one and checks the fencing rule and the recorded Seq order.
func TestFencedStoreWrite(t *testing.T) {
	var clock atomic.Int64
	s := NewFencedStore(func() int64 { return clock.Add(1) })
	steps := []struct {
		resource, lease string
		token           uint64
		want            bool
	}{
		{"r", "L1", 1, true},
		{"r", "L1", 1, true},  // same lease, same token
		{"r", "L2", 2, true},  // newer holder
		{"r", "L1", 1, false}, // stale holder
		{"r", "L3", 2, false}, // token shared by another lease
		{"other", "L9", 1, true},
	}
	for i, st := range steps {
		if got := s.Write(st.resource, "c", st.lease, st.token, false); got != st.want {
			t.Fatalf("step %d: Write(%s, %s, #%d) = %v, want %v", i, st.resource, st.lease, st.token, got, st.want)
		}
	}
	writes, _ := s.Records()
	if len(writes) != len(steps) {
		t.Fatalf("recorded %d writes, want %d", len(writes), len(steps))
	}
	for i, w := range writes {
		if w.Accepted != steps[i].want || (i > 0 && w.Seq <= writes[i-1].Seq) {
			t.Fatalf("record %d = %+v", i, w)
		}
	}
}

// TestFencedStoreGrantClaim checks a returned grant and its claim write are recorded back to back and fence out the old holder.
func TestFencedStoreGrantClaim(t *testing.T) {
	s := NewFencedStore(func() int64 { return 7 })
	s.Write("r", "a", "L1", 1, true)
	if !s.RecordGrantReturned("r", "b", "L2", 2) {
		t.Fatal("claim write of the new holder rejected")
	}
	if s.Write("r", "a", "L1", 1, false) {
		t.Fatal("old holder's write accepted after the new grant's claim")
	}
	writes, grants := s.Records()
	if len(grants) != 1 || len(writes) != 3 {
		t.Fatalf("grants %v writes %v", grants, writes)
	}
	if claim := writes[1]; claim.Seq != grants[0].Seq+1 || !claim.Claim || claim.LeaseID != "L2" || claim.At != 7 {
		t.Fatalf("claim %+v does not directly follow grant %+v", claim, grants[0])
	}
}

// TestFencedStoreConcurrent hammers the store from goroutines (run with -race) and checks Seqs stay unique and tokens never go back.
func TestFencedStoreConcurrent(t *testing.T) {
	s := NewFencedStore(func() int64 { return 0 })
	const workers, perWorker = 4, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				token := uint64(i*workers + w + 1)
				if i%10 == 0 {
					s.RecordGrantReturned("r", "c", "L", token)
				} else {
					s.Write("r", "c", "L", token, false)
				}
			}
		}()
	}
	wg.Wait()
	writes, grants := s.Records()
	seen := make(map[uint64]bool)
	for _, g := range grants {
		seen[g.Seq] = true
	}
	var highest uint64
	var last uint64
	for _, w := range writes {
		if seen[w.Seq] || w.Seq <= last {
			t.Fatalf("seq %d reused or out of order", w.Seq)
		}
		last = w.Seq
		if w.Accepted {
			if w.Token < highest {
				t.Fatalf("accepted #%d after #%d", w.Token, highest)
			}
			highest = w.Token
		}
	}
	if s.Dropped() != 0 {
		t.Fatalf("dropped %d records", s.Dropped())
	}
}
