package checker

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockstep/lockstep/models"
)

// Check names; every violation message starts with its check's name.
const (
	CheckAssumptions     = "assumptions"
	CheckLinearizability = "linearizability"
	CheckFencing         = "fencing"
	CheckFIFO            = "fifo"
	CheckLiveness        = "liveness"
	CheckHerd            = "herd"
	// CheckLostState: replicas applied different entries at one index.
	CheckLostState = "lost-state"
	// CheckDivergence: one entry left different states on two replicas.
	CheckDivergence = "divergence"
	// CheckExpiry: a lease outlived its expiry (or, in a quiet period,
	// was freed late because no entry came).
	CheckExpiry = "expiry"
	// CheckQueue: a status listed another queue than the trace had.
	CheckQueue = "queue"
	// CheckAtomic: a multi request (acquire_many) was granted, queued or
	// cancelled on part of its resources, or across log indexes.
	CheckAtomic = "atomic"
	// CheckShardLatency: a lock shard outside the faulted ones served its
	// non-waiting acquires slower than the bound (Options.ShardLatency).
	CheckShardLatency = "shard-latency"
)

// DefaultLinearizabilityTimeout is used when Options leaves it zero.
const DefaultLinearizabilityTimeout = 30 * time.Second

// maxViolationsPerCheck keeps a badly broken run from producing an
// unreadable report; the rest are only counted (Stats.Suppressed).
const maxViolationsPerCheck = 20

// Verdict is the overall outcome of Check.
type Verdict string

const (
	Success Verdict = "success"
	Failure Verdict = "failure"
	// Unknown means no violation was found but a check could not finish
	// (timeout, cancelled context); it must never be read as a pass.
	Unknown Verdict = "unknown"
)

// Options tunes Check. A zero GrantBound or ElectionBound disables the
// liveness check that uses it.
type Options struct {
	// LinearizabilityTimeout caps the Porcupine search (also capped by
	// the context's deadline); zero means DefaultLinearizabilityTimeout.
	LinearizabilityTimeout time.Duration
	// StrictFIFO turns every queue inversion into a violation; otherwise
	// inversions are only counted (for the throughput policy).
	StrictFIFO bool
	// AllowHerd counts wakeup/grant mismatches without failing, for a
	// policy that deliberately wakes every waiter.
	AllowHerd bool
	// RecoveryBound is how long after the last fault ends the cluster may
	// take to recover before liveness is demanded.
	RecoveryBound time.Duration
	// GrantBound is how long a waiter may stay ungranted once the cluster
	// is stable.
	GrantBound time.Duration
	// ElectionBound is how long past its expiry (or past stability, if
	// later) a lease may stay unfreed.
	ElectionBound time.Duration
	// ExpiryBound is how far past a lease's expiry (log time) the first
	// entry may come while no fault is active; zero disables that half of
	// the expiry check (the other half, freed by the first entry past the
	// expiry, always runs).
	ExpiryBound time.Duration
	// ShardLatency, when its Shards is set, bounds the per-shard acquire
	// latency outside the faulted shards.
	ShardLatency ShardLatency
	// Shards is the lock shard count the run placed resources over
	// (core/placement; 1: one group holds every resource). A request id
	// is deduplicated per shard, so the request-id check judges a reuse
	// by where both resources live. Zero (runs saved before it was
	// recorded): only resources the trace places are judged.
	Shards int
	// DeadlockBound is how long (log time) a wait-for cycle inside one
	// group may stand before CheckDeadlock flags it; zero leaves that
	// half of the check out (its other half, no false deadlock answer,
	// always runs).
	DeadlockBound time.Duration
	// CrossDeadlockBound, when set, judges the cross-shard deadlock
	// detector on the union of the groups' wait-for graphs: how long
	// (virtual time) a client may stand on a cycle with no fault active,
	// and how long before a detector's cancel its client must have stood
	// on one.
	CrossDeadlockBound time.Duration
}

// Violation is one broken property.
type Violation struct {
	Check    string   `json:"check"`
	Message  string   `json:"message"`
	Resource string   `json:"resource,omitempty"`
	LeaseIDs []string `json:"lease_ids,omitempty"`
	// Index is the raft log index involved, when there is one.
	Index uint64 `json:"index,omitempty"`
	// At is the virtual time involved, when known (0 otherwise).
	At int64 `json:"at,omitempty"`
}

// Stats summarises the run and the checks.
type Stats struct {
	Ops        int `json:"ops"`
	UnknownOps int `json:"unknown_ops"`
	Resources  int `json:"resources"`
	// Linearizability is Porcupine's answer: Ok, Illegal, Unknown, or ""
	// when the check did not run.
	Linearizability porcupine.CheckResult `json:"linearizability"`
	TraceEvents     int                   `json:"trace_events"`
	Grants          int                   `json:"grants"`
	QueuedGrants    int                   `json:"queued_grants"`
	Writes          int                   `json:"writes"`
	RejectedWrites  int                   `json:"rejected_writes"`
	Inversions      int                   `json:"inversions"`
	// MaxWaitNs is the longest enqueue-to-grant wait, in log time.
	MaxWaitNs int64 `json:"max_wait_ns"`
	// HerdExcess sums, over wakeups, the waiters woken but not granted.
	HerdExcess int `json:"herd_excess"`
	// Suppressed counts violations beyond maxViolationsPerCheck.
	Suppressed int `json:"suppressed"`
	// QueuesCompared counts status replies whose queue was held against
	// the trace; ExpiriesJudged counts leases whose freeing was judged.
	QueuesCompared int `json:"queues_compared"`
	ExpiriesJudged int `json:"expiries_judged"`
	// ShardLatencyNs is each lock shard's acquire latency quantile when
	// ShardLatency is judged (see checkShardLatency).
	ShardLatencyNs []int64 `json:"shard_latency_ns,omitempty"`
	// Deadlocks counts the deadlock answers CheckDeadlock judged.
	Deadlocks int `json:"deadlocks,omitempty"`
}

// Result is what Check concluded.
type Result struct {
	Verdict    Verdict     `json:"verdict"`
	Violations []Violation `json:"violations,omitempty"`
	Stats      Stats       `json:"stats"`
	// Notes explain an Unknown verdict or skipped checks.
	Notes []string `json:"notes,omitempty"`

	// info is Porcupine's linearization, kept for the HTML report.
	info *porcupine.LinearizationInfo
}

// findings collects violations, capping each check's share.
type findings struct {
	list       []Violation
	perCheck   map[string]int
	suppressed int
}

// add records v, prefixing its message with the check name.
func (f *findings) add(v Violation) {
	if f.perCheck == nil {
		f.perCheck = make(map[string]int)
	}
	if f.perCheck[v.Check] >= maxViolationsPerCheck {
		f.suppressed++
		return
	}
	f.perCheck[v.Check]++
	v.Message = v.Check + ": " + v.Message
	f.list = append(f.list, v)
}

// Check judges a recorded run. Order matters: a malformed history stops
// everything (nothing after it would mean anything), and a linearizability
// failure stops the invariants, whose trace-level findings would only
// restate it less clearly.
func Check(ctx context.Context, h *History, opts Options) Result {
	var f findings
	res := Result{Stats: historyStats(h)}
	finish := func() Result {
		res.Violations = f.list
		res.Stats.Suppressed = f.suppressed
		switch {
		case len(f.list) > 0:
			res.Verdict = Failure
		case len(res.Notes) > 0:
			res.Verdict = Unknown
		default:
			res.Verdict = Success
		}
		return res
	}

	checkAssumptions(h, &f)
	if len(f.list) > 0 {
		res.Notes = append(res.Notes, "history is malformed; later checks skipped")
		return finish()
	}
	checkReplicas(h, &f)
	checkPanics(h, &f)

	lin, info, note := checkLinearizability(ctx, h, opts, &f)
	res.Stats.Linearizability = lin
	res.info = info
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	if lin == porcupine.Illegal {
		res.Notes = append(res.Notes, "invariant checks skipped after a linearizability failure")
		return finish()
	}
	if ctx.Err() != nil {
		res.Notes = append(res.Notes, "cancelled before the invariant checks: "+ctx.Err().Error())
		return finish()
	}

	checkRequestIDs(h, opts, &f)
	checkValidate(h, &f)
	trace := sortedTrace(h.Trace)
	checkAccounted(h, trace, &f)
	checkCallers(h, trace, &f)
	checkWaits(h, trace, &f)
	checkAtomic(trace, &f)
	replay := replayQueues(trace)
	checkFencing(h, trace, &f)
	checkFIFO(replay, opts, &f, &res.Stats)
	checkLiveness(h, replay, trace, opts, &f)
	res.Stats.ExpiriesJudged = checkExpiry(h, trace, opts, &f)
	res.Stats.QueuesCompared = checkQueues(h, trace, &f)
	if opts.StrictFIFO {
		checkQueueProgress(trace, &f)
	}
	checkHerd(h, replay, opts, &f, &res.Stats)
	res.Stats.ShardLatencyNs = checkShardLatency(h, opts.ShardLatency, &f)
	res.Stats.Deadlocks = checkDeadlock(h, trace, opts, &f)
	return finish()
}

// historyStats counts what the history contains.
func historyStats(h *History) Stats {
	var s Stats
	if h == nil {
		return s
	}
	resources := make(map[string]bool)
	for _, op := range h.Ops {
		s.Ops++
		if op.Output.Unknown {
			s.UnknownOps++
		}
		if op.Input.Resource != "" {
			resources[op.Input.Resource] = true
		}
		for _, r := range op.Input.Resources {
			resources[r] = true
		}
	}
	s.Resources = len(resources)
	s.TraceEvents = len(h.Trace)
	for _, ev := range h.Trace {
		if ev.Kind == KindGrant {
			s.Grants++
		}
	}
	s.Writes = len(h.Writes)
	for _, w := range h.Writes {
		if !w.Accepted {
			s.RejectedWrites++
		}
	}
	return s
}

// sortedTrace returns the trace in log order; events of one index keep the
// order the recorder gave them (the state machine's order within an entry).
func sortedTrace(trace []TraceEvent) []TraceEvent {
	out := slices.Clone(trace)
	slices.SortStableFunc(out, func(a, b TraceEvent) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

// isExclusive maps the API's empty mode default to exclusive.
func isExclusive(mode string) bool {
	return mode != models.Shared
}

// fmtNs renders ns (log or virtual time) as a duration for messages.
func fmtNs(ns int64) string { return time.Duration(ns).String() }
