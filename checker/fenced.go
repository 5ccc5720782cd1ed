package checker

import "sync"

// maxFencedRecords bounds how many attempts a FencedStore remembers; later
// attempts are still judged but only counted (see Dropped).
const maxFencedRecords = 1 << 20

// fence is the highest accepted token of one resource and who wrote it.
type fence struct {
	token   uint64
	leaseID string
}

// FencedStore simulates a downstream resource that honours fencing tokens:
// it rejects any write whose token is below the highest it has accepted for
// that resource. It records every attempt, and every grant reaching its
// client, under one global sequence so the checker can order them.
// It is safe for concurrent use.
type FencedStore struct {
	now func() int64

	mu      sync.Mutex
	seq     uint64
	highest map[string]fence
	writes  []Write
	grants  []GrantReturned
	dropped uint64
}

// NewFencedStore returns an empty store stamping records with now (virtual ns).
func NewFencedStore(now func() int64) *FencedStore {
	return &FencedStore{now: now, highest: make(map[string]fence)}
}

// Write attempts a write by the holder of leaseID with token and reports
// whether the store accepted it. An equal token is accepted only from the
// lease that set it: two leases sharing a token is exactly what fencing must
// not let through.
func (s *FencedStore) Write(resource, client, leaseID string, token uint64, claim bool) (accepted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(resource, client, leaseID, token, claim)
}

// RecordGrantReturned records that a grant reached its client and performs
// that holder's claim write under the same lock, so no stale holder can slip
// a write in between. It reports whether the claim write was accepted.
func (s *FencedStore) RecordGrantReturned(resource, client, leaseID string, token uint64) (accepted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	g := GrantReturned{Seq: s.seq, At: s.now(), Resource: resource, LeaseID: leaseID, Token: token}
	if s.room() {
		s.grants = append(s.grants, g)
	}
	return s.writeLocked(resource, client, leaseID, token, true)
}

func (s *FencedStore) writeLocked(resource, client, leaseID string, token uint64, claim bool) bool {
	s.seq++
	f, seen := s.highest[resource]
	accepted := !seen || token > f.token || (token == f.token && leaseID == f.leaseID)
	if accepted {
		s.highest[resource] = fence{token: token, leaseID: leaseID}
	}
	if s.room() {
		s.writes = append(s.writes, Write{
			Seq: s.seq, At: s.now(), Resource: resource, LeaseID: leaseID, Client: client,
			Token: token, Accepted: accepted, Claim: claim,
		})
	}
	return accepted
}

// room reports whether another record fits, counting the drop if not.
func (s *FencedStore) room() bool {
	if len(s.writes)+len(s.grants) < maxFencedRecords {
		return true
	}
	s.dropped++
	return false
}

// Records returns copies of the recorded writes and grant returns, each in
// Seq order.
func (s *FencedStore) Records() ([]Write, []GrantReturned) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Write(nil), s.writes...), append([]GrantReturned(nil), s.grants...)
}

// Dropped reports how many records did not fit; a non-zero value means the
// fencing check saw only a prefix of the run.
func (s *FencedStore) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}
