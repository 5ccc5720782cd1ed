package checker

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/lockstep/lockstep/models"
)

// checkAssumptions verifies what the other checks take for granted: each op
// is well formed, indefinite ops are exactly those that never return, and a
// Porcupine client never has two ops in flight (the recorder must switch an
// indefinite client to a fresh id).
func checkAssumptions(h *History, f *findings) {
	bad := func(resource, format string, args ...any) {
		f.add(Violation{Check: CheckAssumptions, Resource: resource, Message: fmt.Sprintf(format, args...)})
	}
	if h == nil {
		bad("", "no history")
		return
	}
	for i, op := range h.Ops {
		in, out := op.Input, op.Output
		switch {
		case op.ClientID < 0:
			bad(in.Resource, "op %d has negative client id %d", i, op.ClientID)
		case out.Unknown != (op.Return == math.MaxInt64):
			bad(in.Resource, "op %d: unknown=%v but return=%d (unknown ops, and only they, return at MaxInt64)", i, out.Unknown, op.Return)
		case op.Call > op.Return:
			bad(in.Resource, "op %d returns (%d) before its call (%d)", i, op.Return, op.Call)
		case in.Op == models.AcquireMany && (in.Resource != "" || len(in.Resources) == 0):
			bad(in.Resource, "op %d (acquire_many) names resource %q and %d resources, want resources only", i, in.Resource, len(in.Resources))
		case in.Op != models.AcquireMany && in.Resource == "":
			bad("", "op %d has no resource", i)
		case !slices.Contains([]models.OpKind{models.Acquire, models.AcquireMany, models.Release, models.Renew, models.Status, models.Validate}, in.Op):
			bad(in.Resource, "op %d has unknown kind %q", i, in.Op)
		case (in.Op == models.Acquire || in.Op == models.AcquireMany) && !slices.Contains([]string{"", models.Exclusive, models.Shared}, in.Mode):
			bad(in.Resource, "op %d has unknown mode %q", i, in.Mode)
		case in.Op == models.Validate && in.Token == 0:
			bad(in.Resource, "op %d (validate) names no token", i)
		case (in.Op == models.Release || in.Op == models.Renew) && in.LeaseID == "":
			bad(in.Resource, "op %d (%s) names no lease", i, in.Op)
		case in.Op == models.Acquire && out.Granted && !out.Unknown && out.LeaseID == "":
			bad(in.Resource, "op %d granted without a lease id", i)
		}
	}
	checkClientsSequential(h.Ops, bad)
	for i, ev := range h.Trace {
		if !slices.Contains([]string{KindEnqueue, KindGrant, KindRelease, KindExpire, KindCancel, KindRenew, KindFreed, KindJoin, KindGrace, KindRevive}, ev.Kind) {
			bad(ev.Resource, "trace event %d has unknown kind %q", i, ev.Kind)
		} else if ev.Resource == "" {
			bad("", "trace event %d (%s) has no resource", i, ev.Kind)
		}
	}
	seqs := make(map[uint64]bool, len(h.Writes)+len(h.Grants))
	unique := func(seq uint64, what string) {
		if seqs[seq] {
			bad("", "seq %d used twice (%s)", seq, what)
		}
		seqs[seq] = true
	}
	for _, w := range h.Writes {
		unique(w.Seq, "write")
	}
	for _, g := range h.Grants {
		unique(g.Seq, "grant returned")
	}
	for _, ft := range h.Faults {
		if ft.End < ft.Start {
			bad("", "fault %s ends (%d) before it starts (%d)", ft.Name, ft.End, ft.Start)
		}
	}
	for _, w := range h.Wakeups {
		if w.Resource == "" || w.Waiters < 0 {
			bad(w.Resource, "wakeup at index %d is malformed (resource %q, waiters %d)", w.Index, w.Resource, w.Waiters)
		}
	}
}

// checkClientsSequential reports ops of one client id whose intervals
// overlap. Touching intervals (next call == previous return) are allowed:
// virtual time can deliver a reply and the next call at the same instant.
func checkClientsSequential(ops []Op, bad func(resource, format string, args ...any)) {
	byClient := make(map[int][]int)
	for i, op := range ops {
		byClient[op.ClientID] = append(byClient[op.ClientID], i)
	}
	for _, client := range slices.Sorted(maps.Keys(byClient)) {
		idx := byClient[client]
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
		for k := 1; k < len(idx); k++ {
			prev, next := ops[idx[k-1]], ops[idx[k]]
			if next.Call < prev.Return {
				bad(next.Input.Resource, "client %d has ops %d and %d in flight together", client, idx[k-1], idx[k])
			}
		}
	}
}
