package models

import (
	"errors"
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"
)

// The ordered lock model is what the checker runs. It is the reference
// specification (lockSpec.step, also offered whole as
// NewLockNondeterministic) made cheap to search, in three ways that never
// make a correct history fail and rarely let a wrong one pass (the tests
// check it against the reference on simulated runs):
//
//  1. Set aside what has no tracked effect (setAside): a not-granted
//     acquire, an error that changed nothing, any indefinite operation.
//     The reference steps the first two to the state they came from, in
//     any state, so where they sit in a linearization never matters; yet
//     Porcupine would try them at every position, doubling its search per
//     concurrent one. They form a partition of their own, checked (and
//     shown) there.
//  2. Apply indefinite operations lazily (lockCall.indefinite,
//     lockCall.phantoms). An indefinite op may take effect at any point
//     after its call, or never. Instead of Porcupine guessing that point,
//     every later-returning operation first applies the merge of both
//     outcomes (mayTakeEffect): a release makes its lease "maybe gone"
//     (never certainly live), a renew makes it open, an acquire adds one
//     to the phantoms a status may reveal. These merges only ever allow more, and
//     re-applying them is harmless, so the model admits whatever the
//     reference admits for any placement of the indefinite ops.
//  3. Linearize in log order (resourcePlan.inLogOrder). The reference
//     rejects a timed operation (one whose reply carries the log time it
//     was decided at) once log time has passed that time; so a step that
//     moves log time past a timed operation not yet linearized leads only
//     to dead ends, and is refused at once (for ops already called; see
//     inLogOrder). This changes no verdict, only the search: Porcupine's
//     freedom is left to operations decided at the same log time and to
//     those without one (late grants, not_holder without LogTime).
//
// The price of 2 is precision in corner cases only: an indefinite op is
// assumed possibly effective before every operation returning after its
// call, even one the linearization puts first; a lease an indefinite
// release may have ended is never again required to be live. One corner
// is stricter than the reference, still soundly: a status listing a lease
// an indefinite release may have ended must list it as it was, where the
// reference would also accept it as some indefinite acquire's phantom (a
// phantom is a new grant, so it never carries a known lease's id).
// Definite operations are otherwise judged exactly as the reference
// judges them.

// errOutOfLogOrder is a dead end, not a bug: a timed operation decided
// earlier has not been linearized yet and no longer could be.
var errOutOfLogOrder = errors.New("log time would pass an operation not yet linearized")

// orderedState is the ordered model's state for one resource.
type orderedState struct {
	lock lockState
	// ahead holds, sorted, the plan.timed indices of the timed
	// operations linearized so far that were decided at or after
	// lock.logTime.
	ahead []int
	// revealed counts phantoms that statuses have revealed; the phantoms
	// left for a status are its lockCall.phantoms minus this.
	revealed int
}

// asideState is the state of a set-aside partition: its operations are
// legal in every state and change none.
type asideState struct{}

// newOrderedLock returns the ordered model (see above) for spec sp.
func newOrderedLock(sp lockSpec) porcupine.Model {
	return porcupine.Model{
		Partition: partitionOrdered,
		Init: func() interface{} {
			return orderedState{}
		},
		Step: func(state, input, output interface{}) (bool, interface{}) {
			call := input.(lockCall)
			if call.aside {
				return true, asideState{}
			}
			next, err := sp.stepOrdered(state.(orderedState), call, output.(LockOutput))
			if err != nil {
				return false, nil
			}
			return true, next
		},
		Equal: func(a, b interface{}) bool {
			sa, okA := a.(orderedState)
			sb, okB := b.(orderedState)
			if okA != okB {
				return false
			}
			return !okA || sa.equal(sb)
		},
		Hash: func(state interface{}) uint64 {
			if s, ok := state.(orderedState); ok {
				return s.hash()
			}
			return 0
		},
		DescribeOperation: func(input, output interface{}) string {
			call := input.(lockCall)
			desc := DescribeLockOperation(call.LockInput, output.(LockOutput))
			if call.aside {
				desc += " [set aside]"
			}
			return desc
		},
		DescribeState: func(state interface{}) string {
			if s, ok := state.(orderedState); ok {
				return s.String()
			}
			return "set aside: legal in every state; indefinite ones take effect in the resource's other partition"
		},
	}
}

// stepOrdered applies one definite operation: first the indefinite ops
// that may have taken effect before it, then the reference step, then the
// log-order rule.
func (sp lockSpec) stepOrdered(s orderedState, call lockCall, out LockOutput) (orderedState, error) {
	l := s.lock
	for _, u := range call.plan.indefinite[:call.indefinite] {
		l = sp.mayTakeEffect(l, u)
	}
	l.phantoms = uint8(min(max(call.phantoms-s.revealed, 0), phantomsUnbounded))
	next, err := sp.step(l, call.LockInput, out)
	if err != nil {
		return s, err
	}
	if len(next) != 1 {
		// Only indefinite outcomes branch, and those are set aside.
		return s, fmt.Errorf("definite %s branched into %d states", call.Op, len(next))
	}
	n := next[0]
	if !call.plan.inLogOrder(s.ahead, s.lock.logTime, n.logTime, call.ret) {
		return s, fmt.Errorf("%w: %s", errOutOfLogOrder, fmtTime(n.logTime))
	}
	revealed := s.revealed
	if l.phantoms < phantomsUnbounded && n.phantoms < l.phantoms {
		// Only a status reveals (lowers the count); a lease_ended acquire
		// raises it in the reference, but here phantoms are derived from
		// the plan, which already counts it.
		revealed += int(l.phantoms - n.phantoms)
	}
	n.phantoms = 0 // derived per step from lockCall.phantoms
	return orderedState{lock: n, ahead: call.plan.nextAhead(s.ahead, call, n.logTime), revealed: revealed}, nil
}

// inLogOrder reports whether moving log time from `from` to `to` while
// linearizing call leaves behind no timed operation decided in between
// that was called by call's return (ahead lists the linearized timed ops
// decided at or after from). Ops called later are not demanded: the
// reference would reject them later all the same, but leaving them out
// lets the partial linearization of a broken history run on to the op
// that breaks it, for the report; a correct history loses nothing, as an
// op decided earlier in log order was called before a later one returned.
func (p *resourcePlan) inLogOrder(ahead []int, from, to, ret int64) bool {
	if to <= from {
		return true
	}
	lo, hi := p.timedBefore(from), p.timedBefore(to)
	missing := 0
	for i := lo; i < hi; i++ {
		if p.timed[i].call <= ret {
			missing++
		}
	}
	for _, i := range ahead {
		if i >= hi {
			break
		}
		if p.timed[i].call <= ret {
			missing--
		}
	}
	return missing == 0
}

// nextAhead is ahead after call was linearized and log time reached now.
func (p *resourcePlan) nextAhead(ahead []int, call lockCall, now int64) []int {
	out := make([]int, 0, len(ahead)+1)
	for _, i := range ahead {
		if p.timed[i].decided >= now {
			out = append(out, i)
		}
	}
	if call.timed && call.decided >= now {
		i, _ := slices.BinarySearch(out, call.timedIndex)
		out = slices.Insert(out, i, call.timedIndex)
	}
	return out
}

// mayTakeEffect applies an indefinite release or renew as the merge of
// its two outcomes (it took effect at some log time from now on, or never).
// Both merges are idempotent, so applying one again before every later
// operation is what "at some unknown time from its call" means.
func (sp lockSpec) mayTakeEffect(s lockState, in LockInput) lockState {
	i := s.find(leaseKey(in.LeaseID))
	if i < 0 {
		return s
	}
	l := s.leases[i]
	switch in.Op {
	case Release:
		l.MaybeGone = true
	case Renew:
		// A renew that took effect did so on a live lease at log time
		// >= now, so the lease lives until at least now+ttl; one that did
		// not leaves the old expiry. Either way it lives until the
		// smaller, and maybe later (open).
		ttl := l.TTL
		if in.TTLNs != 0 {
			ttl = in.TTLNs
			l.TTL = min(l.TTL, in.TTLNs) // a later TTL-0 renew reuses one of them
			l.Grace = min(l.Grace, in.TTLNs)
		}
		l.ExpiresAt = min(l.ExpiresAt, s.logTime+ttl)
		l.Open = true
	}
	if l == s.leases[i] {
		return s
	}
	return s.with(l)
}

func (s orderedState) equal(o orderedState) bool {
	return s.revealed == o.revealed && slices.Equal(s.ahead, o.ahead) && s.lock.equal(o.lock)
}

// hash is consistent with equal.
func (s orderedState) hash() uint64 {
	h := stateHash(s.lock.hash())
	h.add(uint64(s.revealed))
	for _, i := range s.ahead {
		h.add(uint64(i))
	}
	return uint64(h)
}

// String renders the lock state, and the phantoms revealed so far.
func (s orderedState) String() string {
	return fmt.Sprintf("%s revealed=%d", s.lock, s.revealed)
}
