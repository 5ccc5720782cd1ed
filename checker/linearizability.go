package checker

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockstep/lockstep/models"
)

// porcupineOps converts recorded ops; Metadata carries the op's index in
// History.Ops so the HTML tooltip points back at the JSON.
func porcupineOps(ops []Op) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		out[i] = porcupine.Operation{
			ClientId: op.ClientID,
			Input:    op.Input,
			Output:   op.Output,
			Call:     op.Call,
			Return:   op.Return,
			Metadata: fmt.Sprintf("op %d", i),
		}
	}
	return out
}

// checkLinearizability runs Porcupine within the timeout (and the context's
// deadline). It returns Porcupine's verdict, the linearization info for the
// report, and a note when the verdict is not conclusive.
func checkLinearizability(ctx context.Context, h *History, opts Options, f *findings) (porcupine.CheckResult, *porcupine.LinearizationInfo, string) {
	timeout := opts.LinearizabilityTimeout
	if timeout <= 0 {
		timeout = DefaultLinearizabilityTimeout
	}
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline))
	}
	if ctx.Err() != nil || timeout <= 0 {
		return "", nil, "linearizability not checked: context done"
	}
	ops := porcupineOps(h.Ops)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(models.Lock, ops, timeout)
	cutShort := time.Since(start) >= timeout
	switch res {
	case porcupine.Unknown:
		return res, &info, fmt.Sprintf("linearizability check timed out after %s", timeout)
	case porcupine.Illegal:
		reportIllegal(models.Lock.Partition(ops), info.PartialLinearizations(), cutShort, f)
	}
	return res, &info, ""
}

// reportIllegal names each resource whose partition did not fully
// linearize, with the op that most likely could not: the earliest-returning
// op left out of the longest partial linearization. Partitions come in the
// same order Porcupine used, because it calls the same Partition function.
func reportIllegal(parts [][]porcupine.Operation, partials [][][]int, cutShort bool, f *findings) {
	for i, part := range parts {
		included := make(map[int]bool)
		longest := 0
		for _, p := range partials[i] {
			if len(p) > longest {
				longest = len(p)
				clear(included)
				for _, id := range p {
					included[id] = true
				}
			}
		}
		if longest == len(part) {
			continue
		}
		stuck := -1
		for id, op := range part {
			if !included[id] && op.Return != math.MaxInt64 && (stuck < 0 || op.Return < part[stuck].Return) {
				stuck = id
			}
		}
		in := models.LockInputOf(part[0].Input)
		v := Violation{Check: CheckLinearizability, Resource: in.Resource}
		v.Message = fmt.Sprintf("operations on %q are not linearizable (%d of %d linearize)", in.Resource, longest, len(part))
		if stuck >= 0 {
			op := part[stuck]
			v.Message += fmt.Sprintf("; stuck at %v: %s", op.Metadata,
				models.DescribeLockOperation(models.LockInputOf(op.Input), op.Output.(models.LockOutput)))
			v.At = op.Return
		}
		if cutShort {
			v.Message += " (the search hit its timeout, so this partition may be unfinished rather than illegal)"
		}
		f.add(v)
	}
}
