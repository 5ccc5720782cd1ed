package models

import (
	"errors"
	"testing"
)

func semAcq(client string, permits int64, ttl int64) LockInput {
	in := acq(client, Exclusive, ttl)
	in.Permits = permits
	return in
}

func semHolders(at int64, permits int64, hs ...HolderView) LockOutput {
	out := holders(at, hs...)
	out.Permits = permits
	return out
}

// TestStepSemaphore: goal — on a semaphore of N the model admits up to N
// certainly live exclusive holders and flags the N+1st grant (and a
// status listing N+1, or a shared holder), while a plain lock's rules are
// unchanged; a maybe-live holder is neither counted nor forgotten.
func TestStepSemaphore(t *testing.T) {
	l1 := xLease("L1", 1, 10*sec)
	l2 := xLease("L2", 2, 10*sec)
	one := state(sec, 2, l1)
	two := state(sec, 3, l1, l2)
	maybe := state(sec, 3, l1, lease{ID: leaseKey("L2"), Mode: Exclusive, Token: 2, ExpiresAt: 10 * sec, MaybeGone: true})
	cases := []struct {
		name    string
		from    lockState
		in      LockInput
		out     LockOutput
		wantErr error
		leases  int
	}{
		{"second permit of 2", one, semAcq("b", 2, sec), grant("L2", 2, 2*sec, 3*sec), nil, 2},
		{"third permit of 2", two, semAcq("c", 2, sec), grant("L3", 3, 2*sec, 3*sec), errOvercount, 0},
		{"third permit of 3", two, semAcq("c", 3, sec), grant("L3", 3, 2*sec, 3*sec), nil, 3},
		{"permit beside a maybe-gone one", maybe, semAcq("c", 2, sec), grant("L3", 3, 2*sec, 3*sec), nil, 3},
		{"plain grant beside a permit", one, acq("b", Exclusive, sec), grant("L2", 2, 2*sec, 3*sec), errConflict, 0},
		{"permit after expiry", two, semAcq("c", 2, sec), grant("L3", 3, 10*sec, 11*sec), nil, 1},
		{"permit token not above", two, semAcq("c", 2, sec), grant("L3", 2, 2*sec, 3*sec), errTokenOrder, 0},
		{"status of 2 permits", two, status(), semHolders(2*sec, 2, hv("L1", Exclusive, 1, 10*sec), hv("L2", Exclusive, 2, 10*sec)), nil, 2},
		{"status of 3 holders on 2 permits", lockState{phantoms: 3}, status(), semHolders(2*sec, 2,
			hv("A", Exclusive, 1, 10*sec), hv("B", Exclusive, 2, 10*sec), hv("C", Exclusive, 3, 10*sec)), errOvercount, 0},
		{"status of a shared permit", lockState{phantoms: 2}, status(), semHolders(2*sec, 2,
			hv("A", Exclusive, 1, 10*sec), hv("B", Shared, 2, 10*sec)), errOvercount, 0},
		{"status of two without permits", two, status(), holders(2*sec, hv("L1", Exclusive, 1, 10*sec), hv("L2", Exclusive, 2, 10*sec)), errStatusMismatch, 0},
		{"validate either permit", two, validate(1), validAt(2*sec, true), nil, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, err := exact.step(tc.from, tc.in, tc.out)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil && (len(next) != 1 || len(next[0].leases) != tc.leases) {
				t.Fatalf("next = %v, want one state with %d leases", next, tc.leases)
			}
		})
	}
}
