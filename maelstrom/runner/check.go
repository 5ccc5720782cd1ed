package runner

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/models"
)

// Verdict results.
const (
	Valid   = "valid"
	Invalid = "invalid"
	// Unknown: no violation found, but a check did not finish; never a pass.
	Unknown = "unknown"
)

// Verdict is what a run concluded, as saved in verdict.json.
type Verdict struct {
	Workload string `json:"workload"`
	Seed     int64  `json:"seed"`
	Result   string `json:"result"`
	Counts
	Linearizability porcupine.CheckResult `json:"linearizability"`
	Violations      []string              `json:"violations,omitempty"`
	Notes           []string              `json:"notes,omitempty"`
	Faults          int                   `json:"faults"`
	Network         NetStats              `json:"network"`
	// Lock is the lock checker's full result (lock workload only).
	Lock *checker.Result `json:"lock_checker,omitempty"`
	// CheckNs is how long the checks took.
	CheckNs int64 `json:"check_ns"`
}

// Valid reports whether the run passed.
func (v *Verdict) Valid() bool { return v.Result == Valid }

// visual is what history.html is drawn from.
type visual struct {
	model porcupine.Model
	info  porcupine.LinearizationInfo
}

// Check judges a history: lin-kv with Porcupine and models.KV, the lock
// workload with checker.Check (models.Lock, then the fencing checks over
// the trace the replies reveal).
func Check(ctx context.Context, h *History, timeout time.Duration) (*Verdict, *visual, error) {
	start := time.Now()
	v := &Verdict{Workload: h.Workload, Seed: h.Seed, Counts: h.counts(), Faults: len(h.Faults), Network: h.Network}
	var vis *visual
	var err error
	switch h.Workload {
	case WorkloadLinKV:
		vis, err = checkKV(h, timeout, v)
	case WorkloadLock:
		vis, err = checkLock(ctx, h, timeout, v)
	default:
		err = fmt.Errorf("unknown workload %q", h.Workload)
	}
	v.CheckNs = int64(time.Since(start))
	return v, vis, err
}

func checkKV(h *History, timeout time.Duration, v *Verdict) (*visual, error) {
	ops, err := kvOperations(h)
	if err != nil {
		return nil, err
	}
	res, info := porcupine.CheckOperationsVerbose(models.KV, ops, timeout)
	v.Linearizability = res
	switch res {
	case porcupine.Ok:
		v.Result = Valid
	case porcupine.Illegal:
		v.Result = Invalid
		v.Violations = append(v.Violations, illegalKeys(ops, info)...)
	default:
		v.Result = Unknown
		v.Notes = append(v.Notes, fmt.Sprintf("linearizability check timed out after %s", timeout))
	}
	return &visual{model: models.KV, info: info}, nil
}

// illegalKeys names each key whose operations do not linearize.
func illegalKeys(ops []porcupine.Operation, info porcupine.LinearizationInfo) []string {
	var out []string
	parts := models.KV.Partition(ops)
	partials := info.PartialLinearizations()
	for i, part := range parts {
		longest := 0
		for _, p := range partials[i] {
			longest = max(longest, len(p))
		}
		if longest < len(part) {
			key := part[0].Input.(models.KVInput).Key
			out = append(out, fmt.Sprintf("linearizability: operations on key %s are not linearizable (%d of %d linearize)", key, longest, len(part)))
		}
	}
	return out
}

func checkLock(ctx context.Context, h *History, timeout time.Duration, v *Verdict) (*visual, error) {
	ch, err := lockHistory(h)
	if err != nil {
		return nil, err
	}
	res := checker.Check(ctx, ch, checker.Options{LinearizabilityTimeout: timeout})
	v.Lock = &res
	v.Linearizability = res.Stats.Linearizability
	for _, viol := range res.Violations {
		v.Violations = append(v.Violations, viol.Message)
	}
	v.Notes = append(v.Notes, res.Notes...)
	switch res.Verdict {
	case checker.Success:
		v.Result = Valid
	case checker.Failure:
		v.Result = Invalid
	default:
		v.Result = Unknown
	}
	// checker keeps its linearization to itself; the picture needs one.
	ops := make([]porcupine.Operation, len(ch.Ops))
	for i, op := range ch.Ops {
		ops[i] = porcupine.Operation{ClientId: op.ClientID, Input: op.Input, Output: op.Output, Call: op.Call, Return: op.Return,
			Metadata: fmt.Sprintf("op %d on %s by %s", h.Ops[i].Index, h.Ops[i].Node, h.Ops[i].Client)}
	}
	_, info := porcupine.CheckOperationsVerbose(models.Lock, ops, timeout)
	return &visual{model: models.Lock, info: info}, nil
}

// annotations draws the partitions above the client lanes.
func annotations(h *History) []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, f := range h.Faults {
		end := f.End
		if end == 0 {
			end = math.MaxInt64
		}
		out = append(out, porcupine.Annotation{
			Tag: "nemesis", Start: f.Start, End: end, Description: f.Name, Details: f.String(), BackgroundColor: "#ffe0a0",
		})
	}
	return out
}
