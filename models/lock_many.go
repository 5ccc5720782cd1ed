package models

import (
	"errors"
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"
)

// An AcquireMany is judged by projection: partitionByResource hands a copy
// of it to the partition of each of its resources, with Resource set to
// that resource, and there it steps as the acquire of that one resource
// (its lease, token and expiry from Leases) at the reply's one LogTime.
// Per resource this is exactly what the server did, so a correct history
// passes; an overlapping grant (one of its resources certainly held by
// another) fails in that resource's partition, and a reply granting part
// of its resources (a missing, extra or misplaced lease, or leases on a
// refusal) fails in every partition. Partitions stay per resource, as fast
// as without multi requests. The price: the projections are linearized
// separately, tied together only by their shared log time (which every
// partition orders by), and an indefinite AcquireMany becomes one
// independent phantom per resource, so a status revealing one of its
// grants does not require the others.

// errPartialGrant: an AcquireMany reply granted (or reported) part of its
// resources, or some resource twice.
var errPartialGrant = errors.New("multi request answered for part of its resources")

func isAcquire(op OpKind) bool { return op == Acquire || op == AcquireMany }

// projectMany returns history with every AcquireMany replaced by one copy
// per resource (Input.Resource set to it); other operations stay as they are.
func projectMany(history []porcupine.Operation) []porcupine.Operation {
	if !slices.ContainsFunc(history, func(op porcupine.Operation) bool { return op.Input.(LockInput).Op == AcquireMany }) {
		return history
	}
	out := make([]porcupine.Operation, 0, len(history))
	for _, op := range history {
		in := op.Input.(LockInput)
		if in.Op != AcquireMany {
			out = append(out, op)
			continue
		}
		for _, r := range in.Resources {
			copied := op
			part := in
			part.Resource = r
			copied.Input = part
			out = append(out, copied)
		}
	}
	return out
}

// manyMalformed says why an AcquireMany reply cannot be a whole answer:
// granted (or lease_ended) needs one lease per resource, in request order;
// any other definite answer needs none.
func manyMalformed(in LockInput, out LockOutput) error {
	if out.Unknown {
		return nil
	}
	if !out.Granted && out.Code != CodeLeaseEnded {
		if len(out.Leases) != 0 {
			return fmt.Errorf("%w: not granted, yet %d leases", errPartialGrant, len(out.Leases))
		}
		return nil
	}
	if len(out.Leases) != len(in.Resources) {
		return fmt.Errorf("%w: %d leases for %d resources", errPartialGrant, len(out.Leases), len(in.Resources))
	}
	for i, l := range out.Leases {
		if l.Resource != in.Resources[i] || l.LeaseID == "" {
			return fmt.Errorf("%w: lease %d is for %q (%q), want %q", errPartialGrant, i, l.Resource, l.LeaseID, in.Resources[i])
		}
	}
	return nil
}

// acquireMany steps the projection of an AcquireMany on in.Resource as
// that resource's acquire.
func (sp lockSpec) acquireMany(s lockState, in LockInput, out LockOutput) ([]lockState, error) {
	if err := manyMalformed(in, out); err != nil {
		return nil, err
	}
	single := in
	single.Op, single.Resources = Acquire, nil
	part := LockOutput{Unknown: out.Unknown, Code: out.Code, Granted: out.Granted, LogTimeNs: out.LogTimeNs}
	if i := slices.IndexFunc(out.Leases, func(l ManyLease) bool { return l.Resource == in.Resource }); i >= 0 {
		l := out.Leases[i]
		part.LeaseID, part.Token, part.ExpiresAtNs = l.LeaseID, l.Token, l.ExpiresAtNs
	}
	return sp.acquire(s, single, part)
}
