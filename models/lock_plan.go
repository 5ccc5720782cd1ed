package models

import (
	"cmp"
	"slices"
	"sort"

	"github.com/anishathalye/porcupine"
)

// lockCall is the input Porcupine hands the ordered lock model: the
// recorded LockInput plus what the planner derived from the whole history
// of its resource, which a single step could not know.
type lockCall struct {
	LockInput
	// aside marks an operation with no effect the model tracks itself:
	// it is checked in its resource's set-aside partition.
	aside bool
	// timed says decided is a constraint: the operation is only legal
	// while the model's log time is at most decided (its reply's LogTime).
	// Then it is plan.timed[timedIndex].
	timed      bool
	decided    int64
	timedIndex int
	// ret is the operation's return time.
	ret int64
	// indefinite is how many of plan.indefinite were called by this
	// operation's return (so may take effect before it).
	indefinite int
	// phantoms is how many indefinite (or lease_ended) acquires were called
	// by this operation's return: the most holders a status may reveal.
	phantoms int
	plan     *resourcePlan
}

// resourcePlan is what the planner learned about one resource's history;
// every lockCall of the resource shares it, read-only.
type resourcePlan struct {
	// timed holds the timed operations in decided order.
	timed []timedOp
	// indefinite holds the indefinite releases and renews by call time.
	indefinite []LockInput
}

// timedOp is what the log-order rule needs of a timed operation.
type timedOp struct {
	decided int64
	call    int64
}

// timedBefore counts the timed operations decided before log time t.
func (p *resourcePlan) timedBefore(t int64) int {
	return sort.Search(len(p.timed), func(i int) bool { return p.timed[i].decided >= t })
}

// LockInputOf returns the LockInput of an operation's Input, whether it is
// as recorded or as the ordered model's partitions annotate it.
func LockInputOf(input interface{}) LockInput {
	if c, ok := input.(lockCall); ok {
		return c.LockInput
	}
	return input.(LockInput)
}

// setAside reports whether an operation leaves the state exactly as it
// finds it (the reference model steps it to the same state, whatever that
// state is) or has only effects the plan hands to later operations.
func setAside(in LockInput, out LockOutput) bool {
	if out.Unknown {
		// Acquire: a phantom, counted by lockCall.phantoms. Release and
		// renew: applied lazily, see lockCall.indefinite. Status and
		// validate: none.
		return isAcquire(in.Op) || in.Op == Release || in.Op == Renew || in.Op == Status || in.Op == Validate
	}
	switch in.Op {
	case Acquire, AcquireMany:
		if in.Op == AcquireMany && manyMalformed(in, out) != nil {
			return false // stepped, to be rejected
		}
		return (out.Code != "" && out.Code != CodeLeaseEnded) || (out.Code == "" && !out.Granted)
	case Release, Renew:
		return out.Code != "" && out.Code != CodeNotHolder
	case Status, Validate:
		return out.Code != ""
	}
	return false // an unknown kind stays, for the step to reject
}

// decidedAt returns the log time an effective operation's reply says it
// was decided at, and whether that time constrains the linearization: the
// reference step rejects the operation once log time has passed it. A
// not_holder without a LogTime is the one effective answer without one.
func decidedAt(in LockInput, out LockOutput) (int64, bool) {
	if !isAcquire(in.Op) && in.Op != Release && in.Op != Renew && in.Op != Status && in.Op != Validate {
		return 0, false
	}
	if out.Code == CodeNotHolder && out.LogTimeNs == 0 || out.Code == CodeLeaseEnded {
		return 0, false
	}
	return out.LogTimeNs, true
}

// partitionOrdered splits a history by resource, then each resource into the
// operations the ordered model steps (first) and the ones set aside
// (second), dropping empty halves. Porcupine checks, and the
// visualization shows, each half as its own partition.
func partitionOrdered(history []porcupine.Operation) [][]porcupine.Operation {
	var parts [][]porcupine.Operation
	for _, ops := range partitionByResource(history) {
		stepped, aside := planResource(ops)
		if len(stepped) > 0 {
			parts = append(parts, stepped)
		}
		if len(aside) > 0 {
			parts = append(parts, aside)
		}
	}
	return parts
}

// planResource annotates one resource's operations (see lockCall) and
// splits them into stepped and set-aside ones, each in history order.
func planResource(ops []porcupine.Operation) (stepped, aside []porcupine.Operation) {
	plan := &resourcePlan{}
	var timedOps []int // positions in ops, sorted below like plan.timed
	var acquireCalls []int64
	var indefiniteOps []int // positions in ops
	for i, op := range ops {
		in, out := op.Input.(LockInput), op.Output.(LockOutput)
		switch {
		case out.Unknown && isAcquire(in.Op), isAcquire(in.Op) && out.Code == CodeLeaseEnded:
			// Either may have granted a lease a status reveals before it.
			acquireCalls = append(acquireCalls, op.Call)
		case out.Unknown && (in.Op == Release || in.Op == Renew):
			indefiniteOps = append(indefiniteOps, i)
		}
		if _, ok := decidedAt(in, out); ok && !setAside(in, out) {
			timedOps = append(timedOps, i)
		}
	}
	decided := func(i int) int64 { at, _ := decidedAt(ops[i].Input.(LockInput), ops[i].Output.(LockOutput)); return at }
	slices.SortStableFunc(timedOps, func(a, b int) int {
		return cmp.Or(cmp.Compare(decided(a), decided(b)), cmp.Compare(ops[a].Call, ops[b].Call))
	})
	timedIndex := make(map[int]int, len(timedOps))
	for k, i := range timedOps {
		plan.timed = append(plan.timed, timedOp{decided: decided(i), call: ops[i].Call})
		timedIndex[i] = k
	}
	slices.Sort(acquireCalls)
	slices.SortStableFunc(indefiniteOps, func(a, b int) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
	indefiniteCalls := make([]int64, len(indefiniteOps))
	for k, i := range indefiniteOps {
		plan.indefinite = append(plan.indefinite, ops[i].Input.(LockInput))
		indefiniteCalls[k] = ops[i].Call
	}
	// calledBy counts the calls at or before ret: Porcupine's intervals
	// are closed, so an operation called at ret may precede it.
	calledBy := func(calls []int64, ret int64) int {
		return sort.Search(len(calls), func(i int) bool { return calls[i] > ret })
	}
	for i, op := range ops {
		in, out := op.Input.(LockInput), op.Output.(LockOutput)
		c := lockCall{LockInput: in, plan: plan, ret: op.Return}
		if setAside(in, out) {
			c.aside = true
			op.Input = c
			aside = append(aside, op)
			continue
		}
		c.timedIndex, c.timed = timedIndex[i]
		c.decided = decided(i)
		c.indefinite = calledBy(indefiniteCalls, op.Return)
		c.phantoms = calledBy(acquireCalls, op.Return)
		op.Input = c
		stepped = append(stepped, op)
	}
	return stepped, aside
}
