package lock

import "fmt"

// Counting semaphores (issue 31). A resource acquired with Permits N > 1
// is a semaphore of N: up to N exclusive holders at once, each its own
// lease, expiry and fencing token (the group's token counter grows on every
// grant, so tokens of one semaphore's holders differ and grow in grant
// order), the rest in the one FIFO queue, granted one by one as permits
// free. N is fixed by the acquire that creates the resource and kept while
// the resource has any holder or waiter; once it is empty it is forgotten
// like any free lock, and the next first use may choose another N.
//
// Every acquire of an existing resource must name its N (0 and 1 both
// name a plain lock): as in consul lock -n, the limit must agree, and an
// acquire that disagrees changes nothing (PermitsMismatch). A plain
// acquire on a semaphore is refused rather than given a permit, since its
// caller expects to be alone.

// MaxPermits bounds a semaphore's N. Every holder of a resource is kept in
// one slice that release, renew, expiry and status scan linearly, and a
// status reply lists them all: 1,024 keeps those scans and replies small
// (a few tens of KiB) while leaving room for any realistic pool size.
const MaxPermits = 1024

// ErrBadPermits marks an acquire whose permits can never be granted: above
// MaxPermits, with shared mode, or on an operation that takes none. It is
// an ErrInvalid.
var ErrBadPermits = fmt.Errorf("%w: bad permits", ErrInvalid)

// checkPermits is Check's part for Command.Permits.
func checkPermits(cmd *Command) error {
	if cmd.Permits == 0 {
		return nil
	}
	switch {
	case cmd.Op != OpAcquire:
		return fmt.Errorf("%w: only a single-resource acquire takes permits (acquire_many does not)", ErrBadPermits)
	case cmd.Permits > MaxPermits:
		return fmt.Errorf("%w: permits must be in 0..%d", ErrBadPermits, MaxPermits)
	case cmd.Permits > 1 && cmd.Mode == Shared:
		return fmt.Errorf("%w: a semaphore's permits are exclusive; permits need mode exclusive", ErrBadPermits)
	}
	return nil
}

// permitLimit is how many holders permits allow: 0 and 1 are a plain lock.
func permitLimit(permits uint32) uint32 { return max(permits, 1) }

// semaphore reports whether r is a semaphore (more than one permit).
func (r *resource) semaphore() bool { return r.permits > 1 }

// permitsFree reports whether a semaphore r has a permit left for one more
// exclusive holder. The permit-overcount bug mode lets one holder more in.
func (s *State) permitsFree(r *resource) bool {
	limit := int(r.permits)
	if s.permitOvercount() {
		limit++
	}
	return r.holderCount() < limit
}

// permitsMismatch reports whether cmd disagrees with what r is: a
// semaphore of another N, or a plain lock asked as a semaphore (or the
// reverse).
func permitsMismatch(r *resource, cmd *Command) bool {
	return permitLimit(r.permits) != permitLimit(cmd.Permits)
}

// setPermits makes a resource just created by cmd a semaphore of its N.
func setPermits(r *resource, cmd *Command) {
	if cmd.Permits > 1 {
		r.permits = cmd.Permits
	}
}

// permitFreed tells the throughput policy's racers that a semaphore's
// permit freed: after a holder of resource name left and its queue was
// settled, a permit is free and nobody waits for it. A plain lock (or a
// semaphore) that lost its last holder says so itself (EventFreed from
// reindex); this is the case of a semaphore that still has holders.
func (s *State) permitFreed(index uint64, name string) {
	r := s.resources.find(name)
	if r == nil || !r.semaphore() || len(r.queue()) != 0 || r.holderCount() == 0 || !s.permitsFree(r) {
		return
	}
	s.emit(index, EventFreed, name, Lease{}, false)
}

// heldWithin reports whether n holders are within r's limit, as the
// invariants and a restore demand.
func (s *State) heldWithin(r *resource, n int) bool {
	limit := int(permitLimit(r.permits))
	if s.permitOvercount() && r.semaphore() {
		limit++
	}
	return n <= limit
}
