package runner

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"time"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/maelstrom"
	"github.com/lockstep/lockstep/models"
)

// lockGenerator drives the lock workload: clients acquire a few contended
// resources (some waiting in the queue, some shared), renew and release
// what they hold, now and then release or renew a lease they no longer
// hold (which must fail), and read status.
type lockGenerator struct {
	resources int
}

var _ generator = lockGenerator{}

// maxStale bounds the dead leases a client remembers.
const maxStale = 4

func (g lockGenerator) next(r *rand.Rand, st *clientState, now time.Time) request {
	st.leases = slices.DeleteFunc(st.leases, func(l heldLease) bool {
		if now.After(l.expires) {
			st.remember(l)
			return true
		}
		return false
	})
	p := r.Float64()
	if len(st.leases) > 0 {
		l := st.leases[r.Intn(len(st.leases))]
		switch {
		case p < 0.45:
			return request{f: "release", body: map[string]any{"type": "release", "resource": l.resource, "lease_id": l.id}}
		case p < 0.75:
			return g.renew(r, l)
		}
	} else if len(st.stale) > 0 && p < 0.1 {
		l := st.stale[r.Intn(len(st.stale))]
		if r.Intn(2) == 0 {
			return request{f: "release", body: map[string]any{"type": "release", "resource": l.resource, "lease_id": l.id}}
		}
		return g.renew(r, l)
	}
	resource := fmt.Sprintf("r%d", r.Intn(g.resources))
	if r.Float64() < 0.15 {
		return request{f: "status", body: map[string]any{"type": "status", "resource": resource}}
	}
	body := map[string]any{"type": "acquire", "resource": resource, "client": st.name, "ttl": 300 + r.Intn(1700)}
	var extra time.Duration
	if r.Intn(2) == 0 {
		wait := 100 + r.Intn(900)
		body["wait"] = wait
		extra = time.Duration(wait) * time.Millisecond
	}
	if r.Float64() < 0.2 {
		body["mode"] = models.Shared
	}
	return request{f: "acquire", body: body, extra: extra}
}

func (lockGenerator) renew(r *rand.Rand, l heldLease) request {
	body := map[string]any{"type": "renew", "resource": l.resource, "lease_id": l.id}
	if r.Intn(3) > 0 {
		body["ttl"] = 300 + r.Intn(1700)
	}
	return request{f: "renew", body: body}
}

// lockReply holds every field of the lock workload's replies.
type lockReply struct {
	Granted      bool         `json:"granted"`
	LeaseID      string       `json:"lease_id"`
	FencingToken uint64       `json:"fencing_token"`
	ExpiresIn    int64        `json:"expires_in"`
	ExpiresAtNs  int64        `json:"expires_at_ns"`
	LogTimeNs    int64        `json:"log_time_ns"`
	Holders      []holderJSON `json:"holders"`
}

type holderJSON struct {
	LeaseID      string `json:"lease_id"`
	Mode         string `json:"mode"`
	FencingToken uint64 `json:"fencing_token"`
	ExpiresAtNs  int64  `json:"expires_at_ns"`
}

type lockRequest struct {
	Resource string `json:"resource"`
	Client   string `json:"client"`
	TTL      int64  `json:"ttl"`
	Wait     int64  `json:"wait"`
	Mode     string `json:"mode"`
	LeaseID  string `json:"lease_id"`
}

func (g lockGenerator) observe(st *clientState, op Op, now time.Time) {
	var req lockRequest
	var rep lockReply
	_ = json.Unmarshal(op.Request, &req)
	_ = json.Unmarshal(op.Reply, &rep)
	switch op.F {
	case "acquire":
		if op.Type == TypeOK && rep.Granted {
			st.leases = append(st.leases, heldLease{resource: req.Resource, id: rep.LeaseID, expires: now.Add(time.Duration(rep.ExpiresIn) * time.Millisecond)})
		}
	case "release", "renew":
		i := slices.IndexFunc(st.leases, func(l heldLease) bool { return l.id == req.LeaseID })
		if i < 0 {
			return
		}
		if op.F == "renew" && op.Type == TypeOK {
			st.leases[i].expires = now.Add(time.Duration(rep.ExpiresIn) * time.Millisecond)
			return
		}
		st.remember(st.leases[i])
		st.leases = slices.Delete(st.leases, i, i+1)
	}
}

// remember keeps a dead lease for a later release or renew that must fail.
func (st *clientState) remember(l heldLease) {
	st.stale = append(st.stale, l)
	if len(st.stale) > maxStale {
		st.stale = st.stale[1:]
	}
}

// lockHistory converts a lock history for checker.Check: the ops for the
// lock model, fault windows, and a trace rebuilt from what clients saw.
func lockHistory(h *History) (*checker.History, error) {
	ch := &checker.History{Seed: h.Seed, Scenario: "maelstrom/lock"}
	for _, op := range h.Ops {
		var req lockRequest
		if err := json.Unmarshal(op.Request, &req); err != nil {
			return nil, fmt.Errorf("op %d: request: %w", op.Index, err)
		}
		in := models.LockInput{Op: models.OpKind(op.F), Resource: req.Resource, LeaseID: req.LeaseID, TTLNs: req.TTL * int64(time.Millisecond)}
		if in.Op == models.Acquire {
			in.ClientID, in.Mode, in.Wait = cmp.Or(req.Client, op.Client), req.Mode, req.Wait > 0
		}
		var out models.LockOutput
		ret := op.Complete
		var rep lockReply
		if len(op.Reply) > 0 {
			if err := json.Unmarshal(op.Reply, &rep); err != nil {
				return nil, fmt.Errorf("op %d: reply: %w", op.Index, err)
			}
		}
		switch op.Type {
		case TypeOK:
			out = models.LockOutput{Granted: rep.Granted, LeaseID: rep.LeaseID, Token: rep.FencingToken, ExpiresAtNs: rep.ExpiresAtNs, LogTimeNs: rep.LogTimeNs}
			for _, hv := range rep.Holders {
				out.Holders = append(out.Holders, models.HolderView{Fingerprint: api.LeaseFingerprint(hv.LeaseID), Mode: hv.Mode, Token: hv.FencingToken, ExpiresAtNs: hv.ExpiresAtNs})
			}
		case TypeFail:
			out.Code = maelstrom.CodeName(*op.Code)
			if *op.Code == maelstrom.PreconditionFailed && in.Op != models.Acquire {
				out.Code, out.LogTimeNs = models.CodeNotHolder, rep.LogTimeNs
			}
		default:
			out.Unknown, ret = true, math.MaxInt64
		}
		ch.Ops = append(ch.Ops, checker.Op{ClientID: op.Process, Input: in, Output: out, Call: op.Invoke, Return: ret})
	}
	for _, f := range h.Faults {
		ch.Faults = append(ch.Faults, checker.Fault{Name: f.Name, Start: f.Start, End: f.End, Target: f.Target})
	}
	ch.Trace = replyTrace(ch.Ops)
	return ch, nil
}

// replyTrace rebuilds, from the replies clients received, the part of the
// state machine's trace they reveal, for the checker's fencing checks
// (tokens rise with log time per resource; conflicting holders never
// overlap in log time). Granted acquires give grants at log time
// expires_at - ttl, definite renews and releases give theirs at their
// log_time; the order is log time, then grant/renew/release, then token.
//
// It must never show an overlap a correct server could not produce: a
// lease the trace says is held must really be held. So a lease whose end
// is in doubt, because a release or renew of it had an unknown outcome (a
// renew can shorten a lease), keeps only its grant: its token is still
// checked, its span is not.
func replyTrace(ops []checker.Op) []checker.TraceEvent {
	doubtful := make(map[string]bool)
	for _, op := range ops {
		if op.Output.Unknown && (op.Input.Op == models.Release || op.Input.Op == models.Renew) {
			doubtful[op.Input.LeaseID] = true
		}
	}
	var trace []checker.TraceEvent
	for _, op := range ops {
		in, out := op.Input, op.Output
		if out.Unknown || out.Code != "" {
			continue
		}
		ev := checker.TraceEvent{Resource: in.Resource, LeaseID: out.LeaseID, Client: in.ClientID, Mode: in.Mode, Token: out.Token}
		switch {
		case in.Op == models.Acquire && out.Granted:
			ev.Kind, ev.LogTime, ev.ExpiresAt = checker.KindGrant, out.ExpiresAtNs-in.TTLNs, out.ExpiresAtNs
			if doubtful[out.LeaseID] {
				ev.ExpiresAt = ev.LogTime
			}
		case in.Op == models.Renew && !doubtful[in.LeaseID]:
			ev.Kind, ev.LeaseID, ev.LogTime, ev.ExpiresAt = checker.KindRenew, in.LeaseID, out.LogTimeNs, out.ExpiresAtNs
		case in.Op == models.Release && !doubtful[in.LeaseID]:
			ev.Kind, ev.LeaseID, ev.LogTime = checker.KindRelease, in.LeaseID, out.LogTimeNs
		default:
			continue
		}
		trace = append(trace, ev)
	}
	rank := map[string]int{checker.KindGrant: 0, checker.KindRenew: 1, checker.KindRelease: 2}
	slices.SortStableFunc(trace, func(a, b checker.TraceEvent) int {
		return cmp.Or(cmp.Compare(a.LogTime, b.LogTime), cmp.Compare(rank[a.Kind], rank[b.Kind]), cmp.Compare(a.Token, b.Token))
	})
	for i := range trace {
		trace[i].Index = uint64(i + 1)
	}
	return trace
}
