// Package models holds the sequential specifications (Porcupine models) that
// recorded histories are checked against: the lockstep lock service and a
// linearizable key-value register for Maelstrom's lin-kv workload.
package models

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// OpKind names a lock operation.
type OpKind string

// The lock operations a client can issue.
const (
	Acquire OpKind = "acquire"
	Release OpKind = "release"
	Renew   OpKind = "renew"
	Status  OpKind = "status"
	// AcquireMany takes every resource of LockInput.Resources at once or
	// none (lock_many.go).
	AcquireMany OpKind = "acquire_many"
	// Validate asks whether LockInput.Token is a current holder's token
	// (a read, like Status; lock_validate.go).
	Validate OpKind = "validate"
)

// Lock modes, spelled as on the wire.
const (
	Exclusive = "exclusive"
	Shared    = "shared"
)

// Definite error codes the lock model interprets. Every other non-empty
// code means the operation had no effect.
const (
	// CodeNotHolder: a renew or release whose lease is not (or no longer)
	// a live holder.
	CodeNotHolder = "not_holder"
	// CodeLeaseEnded: an acquire whose request was granted (LeaseID and
	// Token name the grant), but whose lease has ended since.
	CodeLeaseEnded = "lease_ended"
	// CodeRequestIDReused: an acquire whose (client, request id) first
	// named another request; it had no effect.
	CodeRequestIDReused = "request_id_reused"
	// CodeDeadlock: an acquire with a wait refused because waiting would
	// have closed a wait-for cycle (LockOutput.Cycle); it had no effect.
	// Per resource nothing tells a cycle, so the model takes it as any
	// refusal; checker's deadlock check judges the cycle.
	CodeDeadlock = "deadlock"
)

// LockInput is the call half of one lock operation.
type LockInput struct {
	Op       OpKind `json:"op"`
	Resource string `json:"resource"`
	ClientID string `json:"client_id,omitempty"`
	// Mode is Exclusive or Shared; empty means Exclusive (the API default).
	Mode string `json:"mode,omitempty"`
	// TTLNs is the requested lease duration in ns; 0 on renew reuses the
	// lease's TTLNs.
	TTLNs int64 `json:"ttl,omitempty"`
	Wait  bool  `json:"wait,omitempty"`
	// GraceNs is an acquire's grace window in ns (see lease.Grace).
	GraceNs int64 `json:"grace,omitempty"`
	// RequestID makes an acquire idempotent: every attempt with the same
	// (ClientID, RequestID) names one request, granted at most once.
	RequestID string `json:"request_id,omitempty"`
	// Policy is "", "fifo" or "throughput".
	Policy string `json:"policy,omitempty"`
	// LeaseID names the lease a release or renew acts on.
	LeaseID string `json:"lease_id,omitempty"`
	// Token is the fencing token a validate asks about.
	Token uint64 `json:"token,omitempty"`
	// Permits, on an acquire, is the N of the semaphore it asks a permit
	// of (0 or 1: a plain lock). A granted acquire proves the resource was
	// a semaphore of that N then: the server refuses other permits.
	Permits int64 `json:"permits,omitempty"`
	// Resources are an AcquireMany's resources in request order; Resource
	// is then empty as recorded (the model's partitions set it to the
	// resource each copy of the operation is judged on).
	Resources []string `json:"resources,omitempty"`
	// renewedAt, set by the ordered model's planner on a late grant
	// (lateGrant) whose answer reports an expiry a renew of its lease
	// set, is that renew's log time (the answer's own for an indefinite
	// renew): the grant then came at or before it, not at ExpiresAt-TTL.
	renewedAt int64
	// retried, set by the partition (markRetried) on a grant that may
	// replay a grant to an earlier attempt of its request left in doubt,
	// made at the answer's own log time before other grants there.
	retried bool
}

// LockOutput is the return half of one lock operation.
type LockOutput struct {
	// Unknown marks an indefinite outcome (timeout, lost reply): the
	// operation may or may not have taken effect.
	Unknown bool `json:"unknown,omitempty"`
	// Code is "" on success, CodeNotHolder, or another definite error.
	Code        string `json:"code,omitempty"`
	Granted     bool   `json:"granted,omitempty"`
	LeaseID     string `json:"lease_id,omitempty"`
	Token       uint64 `json:"token,omitempty"`
	ExpiresAtNs int64  `json:"expires_at,omitempty"`
	// LogTimeNs is the log time (ns) at which the answer was decided.
	LogTimeNs int64        `json:"log_time"`
	Holders   []HolderView `json:"holders,omitempty"`
	// Queue is a status reply's wait queue, head first. The model does not
	// judge it (queues are judged against the committed trace).
	Queue []WaiterView `json:"queue,omitempty"`
	// Leases are an AcquireMany's grants, one per resource in request
	// order, when Granted (or lease_ended); none otherwise.
	Leases []ManyLease `json:"leases,omitempty"`
	// Valid is a validate's answer.
	Valid bool `json:"valid,omitempty"`
	// Permits is a status reply's semaphore N (0 for a plain lock).
	Permits int64 `json:"permits,omitempty"`
	// Cycle is a deadlock refusal's wait-for cycle by client id, the
	// requester first.
	Cycle []string `json:"cycle,omitempty"`
}

// ManyLease is one resource's grant in an AcquireMany reply.
type ManyLease struct {
	Resource    string `json:"resource"`
	LeaseID     string `json:"lease_id"`
	Token       uint64 `json:"token"`
	ExpiresAtNs int64  `json:"expires_at"`
}

// WaiterView is one queued request as a status reply reports it.
type WaiterView struct {
	Client string `json:"client"`
	Mode   string `json:"mode"`
}

// HolderView is one holder as a status reply reports it: by the
// fingerprint of its lease id (api.LeaseFingerprint), never the id itself.
type HolderView struct {
	Fingerprint string `json:"lease_fingerprint"`
	Mode        string `json:"mode"`
	Token       uint64 `json:"token"`
	ExpiresAtNs int64  `json:"expires_at"`
	// GraceUntilNs, for a holder listed in its grace window, is the
	// window's end; ExpiresAtNs then only says the TTL ran out by the
	// reply's log time (expires_in 0). 0 for a held lease.
	GraceUntilNs int64 `json:"grace_until,omitempty"`
}

// DefaultTimeSlack is the slack of Lock: the HTTP API reports log time and
// expiries in whole milliseconds, so times rebuilt from it (LogTime and
// LogTime+ExpiresIn) run up to 2ms early. Judging liveness only outside
// this band costs nothing but sub-2ms precision.
const DefaultTimeSlack = 2 * time.Millisecond

// LockOptions tunes NewLock.
type LockOptions struct {
	// TimeSlack is how far reported times may be off (see
	// DefaultTimeSlack); 0 judges them exactly.
	TimeSlack time.Duration
}

// NewLockNondeterministic returns the reference lock specification in
// Porcupine's nondeterministic form: Step returns every state the service
// may be in after an operation, which is how indefinite outcomes are
// modelled. Its power-set search is exponential in the concurrent
// indefinite and blocking operations; NewLock checks the same operations
// against the same judgements in a form that stays fast.
func NewLockNondeterministic(opts LockOptions) porcupine.NondeterministicModel {
	sp := lockSpec{slack: max(0, int64(opts.TimeSlack))}
	return porcupine.NondeterministicModel{
		Partition: partitionByResource,
		Init: func() []interface{} {
			return []interface{}{lockState{}}
		},
		Step: func(state, input, output interface{}) []interface{} {
			next, err := sp.step(state.(lockState), input.(LockInput), output.(LockOutput))
			if err != nil {
				return nil
			}
			states := make([]interface{}, len(next))
			for i, s := range next {
				states[i] = s
			}
			return states
		},
		Equal: func(a, b interface{}) bool {
			return a.(lockState).equal(b.(lockState))
		},
		Hash: func(state interface{}) uint64 {
			return state.(lockState).hash()
		},
		DescribeOperation: func(input, output interface{}) string {
			return DescribeLockOperation(input.(LockInput), output.(LockOutput))
		},
		DescribeState: func(state interface{}) string {
			return state.(lockState).String()
		},
	}
}

// NewLock returns the model to hand to porcupine.CheckOperations*: the
// reference specification of NewLockNondeterministic made deterministic
// and ordered by log time (lock_ordered.go says how, and why that stays
// sound). Its Partition gives each resource up to two partitions (and
// visualization lane groups): the operations it steps, then those set
// aside because their place in a linearization cannot matter.
//
// Soundness (never reject a history a correct server could produce) comes
// first; the choices of the reference, each detailed where it is made:
//   - "not granted" is always legal and its LogTime is ignored;
//   - an unknown acquire adds a phantom that never blocks a grant and may
//     only be revealed later by a status; a revealed phantom is never
//     certainly live (the server releases a grant it could not deliver)
//     until an acquire delivers it to a client;
//   - an unknown release branches (released or not); an unknown renew
//     branches (unchanged, or extended to an unknown expiry: "open");
//   - a grant reported after it was made (ExpiresAt-TTL < LogTime: a
//     queued grant found late, a dedupe replay) takes effect at its grant
//     time when possible and only needs a new token, not the highest; if
//     its expiry is one a renew of its lease set (markRenewed), the grant
//     came at some time up to that renew, and its own expiry is unknown;
//   - a grant that looks immediate but may replay the grant to an earlier
//     attempt of its request left in doubt (markRetried) needs a token
//     above those of earlier log times only, not above those of grants
//     made since at the same log time;
//   - a not_holder without a LogTime forces log time up to the lease's
//     expiry instead of being judged at an unknown time;
//   - a lease is judged live or expired only outside the time slack;
//   - status entries certainly expired at the status' LogTime are ignored;
//   - tokens are ordered per resource, not across the Raft group.
func NewLock(opts LockOptions) porcupine.Model {
	return newOrderedLock(lockSpec{slack: max(0, int64(opts.TimeSlack))})
}

// Lock is NewLock with DefaultTimeSlack; the checker uses it.
var Lock = NewLock(LockOptions{TimeSlack: DefaultTimeSlack})

// partitionByResource splits a history so each lock is checked on its own:
// operations on different resources never constrain each other, because the
// model keeps no state shared between resources (tokens are checked per
// resource, which is weaker than the group-wide order but sound). An
// AcquireMany is judged in every partition of its resources (see
// projectMany), so histories with multi requests keep this speed.
func partitionByResource(history []porcupine.Operation) [][]porcupine.Operation {
	parts := partitionBy(projectMany(history), func(op porcupine.Operation) string { return op.Input.(LockInput).Resource })
	for _, ops := range parts {
		markRenewed(ops)
		markRetried(ops)
	}
	return parts
}

// expiryReadPrecision is how far apart two answers may put one expiry:
// the HTTP API truncates log time and expires_in to whole milliseconds, so
// an expiry rebuilt as their sum lies in (T-2ms, T] and two such whole
// numbers differ by at most 1ms (leaderCrash seed 307, sweep 8: a late
// grant answered 7.842 for the lease its renew had answered 7.843).
const expiryReadPrecision = int64(time.Millisecond)

func abs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}

// markRenewed sets LockInput.renewedAt on every grant of one resource's
// history whose answer may show its lease as a renew left it: the answer's
// expiry is (to expiryReadPrecision) one a definite renew of the lease
// answered by the answer's log time (the earliest such renew's log time),
// or, for a late grant (lateGrant), an indefinite renew of the lease was
// called by the answer's return (the answer's log time). A grant that
// looks immediate is marked only by a definite renew: a first attempt
// answered after its retry and a renew at one log time shows the lease as
// granted then (leaderCrash seed 487). No single step can know this: the
// renew may be linearized after the grant it explains.
func markRenewed(ops []porcupine.Operation) {
	type renewal struct {
		call int64
		out  LockOutput
	}
	renews := make(map[string][]renewal)
	for _, op := range ops {
		if in, out := op.Input.(LockInput), op.Output.(LockOutput); in.Op == Renew && (out.Unknown || out.Code == "") {
			renews[leaseKey(in.LeaseID)] = append(renews[leaseKey(in.LeaseID)], renewal{op.Call, out})
		}
	}
	for i, op := range ops {
		in, out := op.Input.(LockInput), op.Output.(LockOutput)
		if in.Op != Acquire || out.Code != "" || !out.Granted || in.TTLNs <= 0 || out.ExpiresAtNs-in.TTLNs > out.LogTimeNs {
			continue
		}
		late := out.ExpiresAtNs-in.TTLNs < out.LogTimeNs
		at := int64(0)
		for _, r := range renews[leaseKey(out.LeaseID)] {
			var t int64
			switch {
			case r.out.Unknown && r.call <= op.Return && late:
				t = out.LogTimeNs
			case !r.out.Unknown && abs(r.out.ExpiresAtNs-out.ExpiresAtNs) <= expiryReadPrecision && r.out.LogTimeNs <= out.LogTimeNs:
				t = r.out.LogTimeNs
			}
			if t != 0 && (at == 0 || t < at) {
				at = t
			}
		}
		if at != 0 {
			in.renewedAt = at
			ops[i].Input = in
		}
	}
}

// markRetried sets LockInput.retried on every grant of one resource's
// history that may be a retry answered, from the dedupe table, with the
// grant an earlier attempt of its request got unseen while log time stood
// still (README "Semantics": a retry is answered from what became of the
// first), so that grants with higher tokens may have come in between at
// the same log time. Such a grant
//   - looks immediate (ExpiresAt-TTL == LogTime; a later answer is judged
//     as a late grant anyway);
//   - follows an attempt of its request with an unknown outcome, called
//     before its own call and by the return of every answer showing a
//     higher token (those grants came after the replayed one); a definite
//     failure, such as unavailable (surely not applied), leaves nothing
//     to replay;
//   - carries a token no answer shows for another lease: a replay names
//     the one lease its token was granted to.
//
// No single step can know this: the earlier attempt is set aside, never
// stepped, and answers showing higher tokens may be linearized later.
func markRetried(ops []porcupine.Operation) {
	open := make(map[string]int64) // request -> earliest indefinite attempt's call
	for _, op := range ops {
		in, out := op.Input.(LockInput), op.Output.(LockOutput)
		if key := requestKey(in); in.Op == Acquire && out.Unknown && key != "" {
			if at, ok := open[key]; !ok || op.Call < at {
				open[key] = op.Call
			}
		}
	}
	if len(open) == 0 {
		return
	}
	shown := tokensShown(ops)
	for i, op := range ops {
		in, out := op.Input.(LockInput), op.Output.(LockOutput)
		if in.Op != Acquire || out.Code != "" || !out.Granted || in.TTLNs <= 0 || out.ExpiresAtNs-in.TTLNs != out.LogTimeNs {
			continue
		}
		at, ok := open[requestKey(in)]
		if !ok || at >= op.Call {
			continue
		}
		id := leaseKey(out.LeaseID)
		if slices.ContainsFunc(shown, func(t shownToken) bool {
			return t.token == out.Token && t.lease != id || t.token > out.Token && t.ret < at
		}) {
			continue
		}
		in.retried = true
		ops[i].Input = in
	}
}

// shownToken is a token a definite answer showed, with its lease and the
// answer's return.
type shownToken struct {
	token uint64
	lease string // leaseKey
	ret   int64
}

// tokensShown lists the tokens the definite answers of one resource's
// history show: grants, lease_ended, renews and status holders.
func tokensShown(ops []porcupine.Operation) []shownToken {
	var shown []shownToken
	for _, op := range ops {
		in, out := op.Input.(LockInput), op.Output.(LockOutput)
		if out.Unknown || out.Code != "" && out.Code != CodeLeaseEnded {
			continue
		}
		add := func(token uint64, id string) {
			if token != 0 {
				shown = append(shown, shownToken{token, leaseKey(id), op.Return})
			}
		}
		switch in.Op {
		case Acquire:
			add(out.Token, out.LeaseID)
		case AcquireMany:
			for _, l := range out.Leases {
				if l.Resource == in.Resource {
					add(l.Token, l.LeaseID)
				}
			}
		case Renew:
			add(out.Token, in.LeaseID)
		case Status:
			for _, h := range out.Holders {
				shown = append(shown, shownToken{h.Token, h.Fingerprint, op.Return})
			}
		}
	}
	return shown
}

// normalizeMode maps the API's empty default to Exclusive.
func normalizeMode(mode string) string {
	if mode == "" {
		return Exclusive
	}
	return mode
}

// shortMode renders a mode as X or S for compact descriptions.
func shortMode(mode string) string {
	if normalizeMode(mode) == Shared {
		return "S"
	}
	return "X"
}

// fmtTime renders a log time or duration in ns compactly.
func fmtTime(ns int64) string {
	return time.Duration(ns).String()
}

// DescribeLockOperation renders one operation for the HTML visualization.
func DescribeLockOperation(in LockInput, out LockOutput) string {
	var call string
	switch in.Op {
	case Acquire:
		wait := ""
		if in.Wait {
			wait = ", wait"
		}
		if in.Permits > 1 {
			wait += fmt.Sprintf(", permits=%d", in.Permits)
		}
		if in.GraceNs != 0 {
			wait += ", grace=" + fmtTime(in.GraceNs)
		}
		call = fmt.Sprintf("acquire(%s %s, ttl=%s%s)", in.ClientID, shortMode(in.Mode), fmtTime(in.TTLNs), wait)
	case Release:
		call = fmt.Sprintf("release(%s)", in.LeaseID)
	case Renew:
		call = fmt.Sprintf("renew(%s, ttl=%s)", in.LeaseID, fmtTime(in.TTLNs))
	case Status:
		call = "status()"
	case Validate:
		call = fmt.Sprintf("validate(#%d)", in.Token)
	case AcquireMany:
		call = fmt.Sprintf("acquire_many(%s %s %v, ttl=%s)", in.ClientID, shortMode(in.Mode), in.Resources, fmtTime(in.TTLNs))
	default:
		call = fmt.Sprintf("%s()", in.Op)
	}
	var ret string
	switch {
	case out.Unknown:
		ret = "unknown"
	case out.Code != "":
		ret = out.Code
	case isAcquire(in.Op) && !out.Granted:
		ret = "not granted"
	case in.Op == AcquireMany:
		ret = fmt.Sprintf("%s #%d exp=%s (%d leases)", out.LeaseID, out.Token, fmtTime(out.ExpiresAtNs), len(out.Leases))
	case in.Op == Acquire:
		ret = fmt.Sprintf("%s #%d exp=%s", out.LeaseID, out.Token, fmtTime(out.ExpiresAtNs))
	case in.Op == Renew:
		ret = fmt.Sprintf("exp=%s", fmtTime(out.ExpiresAtNs))
	case in.Op == Validate:
		ret = fmt.Sprintf("valid=%v", out.Valid)
	case in.Op == Status:
		hs := make([]string, len(out.Holders))
		for i, h := range out.Holders {
			hs[i] = fmt.Sprintf("%s:%s#%d exp=%s", h.Fingerprint, shortMode(h.Mode), h.Token, fmtTime(h.ExpiresAtNs))
		}
		ret = "[" + strings.Join(hs, " ") + "]"
		if out.Permits > 1 {
			ret += fmt.Sprintf(" of %d permits", out.Permits)
		}
	default:
		ret = "ok"
	}
	if !out.Unknown && out.LogTimeNs != 0 {
		ret += " @" + fmtTime(out.LogTimeNs)
	}
	return call + " -> " + ret
}
