package models

import (
	"errors"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestAcquireManyModel: goal — the lock model accepts a correct history
// with multi requests and rejects a partial grant and an overlapping one,
// in both its ordered and its reference (nondeterministic) forms, while
// partitions stay per resource. Method: small hand-written histories.
func TestAcquireManyModel(t *testing.T) {
	const s = int64(time.Second)
	many := func(client string, resources ...string) LockInput {
		return LockInput{Op: AcquireMany, ClientID: client, Resources: resources, TTLNs: 10 * s}
	}
	single := func(client, resource string) LockInput {
		return LockInput{Op: Acquire, ClientID: client, Resource: resource, TTLNs: 10 * s}
	}
	lease := func(resource, id string, token uint64, at int64) ManyLease {
		return ManyLease{Resource: resource, LeaseID: id, Token: token, ExpiresAtNs: at + 10*s}
	}
	granted := func(at int64, leases ...ManyLease) LockOutput {
		return LockOutput{Granted: true, LogTimeNs: at, LeaseID: leases[0].LeaseID, Token: leases[0].Token,
			ExpiresAtNs: leases[0].ExpiresAtNs, Leases: leases}
	}
	op := func(client int, in LockInput, out LockOutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
	}
	release := func(resource, id string) LockInput {
		return LockInput{Op: Release, Resource: resource, LeaseID: id}
	}
	cases := []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"granted all, released, then a single acquire", []porcupine.Operation{
			op(0, many("m", "p", "q"), granted(s, lease("p", "M0", 1, s), lease("q", "M1", 2, s)), 0, 2*s),
			op(0, release("p", "M0"), LockOutput{LogTimeNs: 3 * s}, 3*s, 4*s),
			op(1, single("a", "p"), LockOutput{Granted: true, LeaseID: "A", Token: 3, LogTimeNs: 5 * s, ExpiresAtNs: 15 * s}, 5*s, 6*s),
			op(1, single("b", "q"), LockOutput{LogTimeNs: 7 * s}, 7*s, 8*s),
		}, porcupine.Ok},
		{"refused multi request beside a holder", []porcupine.Operation{
			op(0, single("a", "q"), LockOutput{Granted: true, LeaseID: "A", Token: 1, LogTimeNs: s, ExpiresAtNs: 11 * s}, 0, 2*s),
			op(1, many("m", "p", "q"), LockOutput{LogTimeNs: 3 * s}, 3*s, 4*s),
		}, porcupine.Ok},
		{"partial grant: one lease for two resources", []porcupine.Operation{
			op(0, many("m", "p", "q"), granted(s, lease("p", "M0", 1, s)), 0, 2*s),
		}, porcupine.Illegal},
		{"partial grant: leases on a refusal", []porcupine.Operation{
			op(0, many("m", "p", "q"), LockOutput{LogTimeNs: s, Leases: []ManyLease{lease("p", "M0", 1, s)}}, 0, 2*s),
		}, porcupine.Illegal},
		{"overlapping grant: q is certainly held", []porcupine.Operation{
			op(0, single("a", "q"), LockOutput{Granted: true, LeaseID: "A", Token: 1, LogTimeNs: s, ExpiresAtNs: 11 * s}, 0, 2*s),
			op(1, many("m", "p", "q"), granted(3*s, lease("p", "M0", 2, 3*s), lease("q", "M1", 3, 3*s)), 3*s, 4*s),
		}, porcupine.Illegal},
		{"overlapping grant: a single acquire inside a multi request's hold", []porcupine.Operation{
			op(0, many("m", "p", "q"), granted(s, lease("p", "M0", 1, s), lease("q", "M1", 2, s)), 0, 2*s),
			op(1, single("a", "q"), LockOutput{Granted: true, LeaseID: "A", Token: 3, LogTimeNs: 3 * s, ExpiresAtNs: 13 * s}, 3*s, 4*s),
		}, porcupine.Illegal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(Lock, tc.ops, 5*time.Second); got != tc.want {
				t.Errorf("ordered model: %v, want %v", got, tc.want)
			}
			nondet := NewLockNondeterministic(LockOptions{TimeSlack: DefaultTimeSlack})
			ref := nondet.ToModel()
			if got := porcupine.CheckOperationsTimeout(ref, tc.ops, 5*time.Second); got != tc.want {
				t.Errorf("reference model: %v, want %v", got, tc.want)
			}
		})
	}
	parts := partitionByResource([]porcupine.Operation{
		op(0, many("m", "p", "q"), granted(s, lease("p", "M0", 1, s), lease("q", "M1", 2, s)), 0, 2*s),
		op(1, single("a", "r"), LockOutput{LogTimeNs: s}, 0, 2*s),
	})
	if len(parts) != 3 {
		t.Fatalf("%d partitions, want one per resource (3)", len(parts))
	}
	_, err := lockSpec{}.step(lockState{}, LockInput{Op: AcquireMany, Resource: "p", Resources: []string{"p", "q"}, TTLNs: 10 * s},
		granted(s, lease("p", "M0", 1, s)))
	if !errors.Is(err, errPartialGrant) {
		t.Fatalf("partial grant rejected for %v, want errPartialGrant", err)
	}
}
