package models

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockstep/lockstep/core/api"
)

// Reasons a lock step is illegal. Porcupine only needs "no next state"; the
// reasons exist so tests can assert that each class of bug is caught for the
// right cause.
var (
	errLogTimeBackwards = errors.New("log time went backwards")
	errConflict         = errors.New("granted while a conflicting holder is live")
	errTokenOrder       = errors.New("fencing token not greater than an earlier token")
	errNotLive          = errors.New("succeeded on a lease that is not a live holder")
	errFalseNotHolder   = errors.New("not_holder for a lease that is certainly live")
	errTokenMismatch    = errors.New("token differs from the lease's token")
	errStatusMismatch   = errors.New("status holders differ from the live holders")
	errRequestRegranted = errors.New("one request id answered with two different leases")
	errResurrected      = errors.New("a released lease reported live again")
	errRenewExpiry      = errors.New("a renew answered another expiry than its log time plus the TTL")
	errUnknownOp        = errors.New("unknown operation")
)

// phantomsUnbounded saturates the phantom count: once reached it is never
// decremented, which only makes the model more permissive (sound).
const phantomsUnbounded = 255

// lease is one holder the model knows. Leases are known by the fingerprint
// of their id (leaseKey): a status reply names holders only so.
type lease struct {
	ID    string // leaseKey of the lease id
	Mode  string // normalized
	Token uint64
	// ExpiresAt is the expiry, or, when Open, a lower bound on it.
	ExpiresAt int64
	// TTL (ns) is what a renew with TTL 0 reuses; 0 when unknown.
	TTL int64
	// Grace (ns) is the lease's grace window: past ExpiresAt it holds
	// nothing (validate says not valid) but still keeps others out, and a
	// renew may revive it, until ExpiresAt+Grace (end). A renew to a
	// shorter TTL cuts it to that TTL, as the server does.
	Grace int64
	// Open means an indefinite renew may have moved the expiry to an
	// unknown later time, so the lease is only "possibly live" past
	// ExpiresAt until some definite answer proves it dead or live.
	Open bool
	// MaybeGone means an indefinite release may have ended the lease at
	// some unknown log time: it is never certainly live, yet still
	// certainly dead after its expiry (unless Open).
	MaybeGone bool
	// Undelivered marks a lease only a status revealed (the grant of an
	// acquire whose outcome is unknown): no client was told of it, and
	// the server releases such an orphan when it learns the request's node
	// died before delivering it, at a log time no operation records. Like
	// MaybeGone it is never certainly live; unlike it, a status listing it
	// does not clear it, only its delivery to a client does.
	Undelivered bool
}

// lockState is the model's knowledge about one resource. It is immutable:
// every transition builds a new value, and leases is shared, never edited.
type lockState struct {
	// logTime is the largest log time linearized so far; real log time is
	// non-decreasing in log order, and the real log order is one valid
	// linearization, so demanding it here rejects no correct history.
	logTime int64
	// tokenFloor is one more than the highest token known on this
	// resource; every fresh grant must reach it. Tokens of phantoms the
	// model never saw are not counted, which only weakens the check.
	tokenFloor uint64
	// floorBefore is tokenFloor as it stood when log time last moved:
	// grants made at earlier log times stay below it, whatever was
	// granted since at logTime. A possibly replayed grant (markRetried)
	// must reach only this.
	floorBefore uint64
	// phantoms bounds how many indefinite acquires may have granted a
	// lease the model never learned of. A phantom never blocks a grant
	// (its existence is not certain); it only lets a status reveal it.
	phantoms uint8
	leases   []lease // sorted by ID
	// requests maps the acquires that carried a request id to the lease
	// they were granted, sorted by key; never edited in place.
	requests []request
}

// request is one request id's grant as the model learned it.
type request struct {
	Key   string // client id, NUL, request id
	Lease string
	// Released: a definite release ended the lease, so a retry may say the
	// lease ended but never that it is live.
	Released bool
}

// leaseKey is how the model knows a lease: the fingerprint a status
// reply shows for it.
func leaseKey(id string) string { return api.LeaseFingerprint(id) }

// requestKey names the request of an acquire, or "" without a request id.
func requestKey(in LockInput) string {
	if in.RequestID == "" {
		return ""
	}
	return in.ClientID + "\x00" + in.RequestID
}

func (s lockState) request(key string) (request, bool) {
	i, ok := slices.BinarySearchFunc(s.requests, key, func(r request, k string) int { return cmp.Compare(r.Key, k) })
	if !ok {
		return request{}, false
	}
	return s.requests[i], true
}

// withRequest returns s with r added or replacing the request of its key.
func (s lockState) withRequest(r request) lockState {
	reqs := slices.Clone(s.requests)
	i, ok := slices.BinarySearchFunc(reqs, r.Key, func(x request, k string) int { return cmp.Compare(x.Key, k) })
	if ok {
		reqs[i] = r
	} else {
		reqs = slices.Insert(reqs, i, r)
	}
	s.requests = reqs
	return s
}

// released marks every request granted lease id as released.
func (s lockState) released(id string) lockState {
	for i, r := range s.requests {
		if r.Lease == id && !r.Released {
			reqs := slices.Clone(s.requests)
			reqs[i].Released = true
			s.requests = reqs
			return s.released(id)
		}
	}
	return s
}

// lockSpec holds the judgement parameters shared by all steps.
type lockSpec struct {
	// slack (ns) is how far reported times may be off: a lease is certainly
	// live at T only while ExpiresAt > T+slack and certainly expired once
	// ExpiresAt <= T-slack; in between it is "maybe live", which forbids
	// nothing and requires nothing.
	slack int64
}

// certainlyLive: the lease surely still keeps the resource (held, or in
// its grace window): no conflicting grant, no not_holder, listed by status.
func (sp lockSpec) certainlyLive(l lease, now int64) bool {
	return !l.MaybeGone && !l.Undelivered && l.end() > now+sp.slack
}

// certainlyValid: the lease is surely held, not merely in its grace
// window: validate must call its token valid.
func (sp lockSpec) certainlyValid(l lease, now int64) bool {
	return !l.MaybeGone && !l.Undelivered && l.ExpiresAt > now+sp.slack
}

// certainlyInGrace: the lease's TTL surely ran out (it cannot have been
// renewed unseen): if it still exists, it is in its grace window, and
// validate must not call its token valid.
func (sp lockSpec) certainlyInGrace(l lease, now int64) bool {
	return !l.Open && l.ExpiresAt <= now-sp.slack
}

// certainlyExpired: the lease and its grace window are surely over.
func (sp lockSpec) certainlyExpired(l lease, now int64) bool {
	return !l.Open && l.end() <= now-sp.slack
}

// end is when the lease stops keeping the resource: its expiry, plus its
// grace window.
func (l lease) end() int64 { return l.ExpiresAt + l.Grace }

// find returns the index of the lease with id, or -1.
func (s lockState) find(id string) int {
	i, ok := slices.BinarySearchFunc(s.leases, id, func(l lease, id string) int { return cmp.Compare(l.ID, id) })
	if !ok {
		return -1
	}
	return i
}

// without returns s minus the lease at index i.
func (s lockState) without(i int) lockState {
	s.leases = slices.Delete(slices.Clone(s.leases), i, i+1)
	return s
}

// with returns s with l added or replacing the lease of the same id.
func (s lockState) with(l lease) lockState {
	leases := slices.Clone(s.leases)
	i, ok := slices.BinarySearchFunc(leases, l.ID, func(x lease, id string) int { return cmp.Compare(x.ID, id) })
	if ok {
		leases[i] = l
	} else {
		leases = slices.Insert(leases, i, l)
	}
	s.leases = leases
	return s
}

// advance moves the state to log time now, forgetting leases that are
// certainly expired. Open leases stay: they may have been extended.
func (sp lockSpec) advance(s lockState, now int64) (lockState, error) {
	if now < s.logTime {
		return s, fmt.Errorf("%w: %s after %s", errLogTimeBackwards, fmtTime(now), fmtTime(s.logTime))
	}
	if now > s.logTime {
		s.floorBefore = s.tokenFloor
	}
	s.logTime = now
	expired := func(l lease) bool { return sp.certainlyExpired(l, now) }
	if slices.ContainsFunc(s.leases, expired) {
		s.leases = slices.DeleteFunc(slices.Clone(s.leases), expired)
	}
	return s, nil
}

// conflicts reports whether two modes cannot be held at the same time.
func conflicts(a, b string) bool {
	return a == Exclusive || b == Exclusive
}

// step returns every state the resource may be in after the operation,
// or an error saying why the operation is impossible from s.
func (sp lockSpec) step(s lockState, in LockInput, out LockOutput) ([]lockState, error) {
	switch in.Op {
	case Acquire:
		return sp.acquire(s, in, out)
	case AcquireMany:
		return sp.acquireMany(s, in, out)
	case Release:
		return sp.release(s, in, out)
	case Renew:
		return sp.renew(s, in, out)
	case Status:
		return sp.status(s, out)
	case Validate:
		return sp.validate(s, in, out)
	}
	return nil, fmt.Errorf("%w %q", errUnknownOp, in.Op)
}

func (sp lockSpec) acquire(s lockState, in LockInput, out LockOutput) ([]lockState, error) {
	if out.Unknown {
		// Only an upper bound on phantoms is kept; "not granted" needs no
		// branch of its own because Porcupine may also linearize an
		// unknown operation after everything else, where it has no effect.
		if s.phantoms < phantomsUnbounded {
			s.phantoms++
		}
		return []lockState{s}, nil
	}
	if out.Code == CodeLeaseEnded {
		return sp.leaseEnded(s, in, out)
	}
	if out.Code != "" || !out.Granted {
		// Not granted is always a legal answer: queue fairness is judged
		// elsewhere, and its LogTime is not trusted to be in log order.
		return []lockState{s}, nil
	}
	key := requestKey(in)
	if r, ok := s.request(key); ok {
		if r.Lease != leaseKey(out.LeaseID) {
			return nil, fmt.Errorf("%w: %s answered %s, first %s", errRequestRegranted, in.RequestID, leaseKey(out.LeaseID), r.Lease)
		}
		if r.Released && out.ExpiresAtNs > out.LogTimeNs+sp.slack {
			return nil, fmt.Errorf("%w: %s (request %s) live until %s at %s", errResurrected, out.LeaseID, in.RequestID, fmtTime(out.ExpiresAtNs), fmtTime(out.LogTimeNs))
		}
	}
	next, err := sp.grantStep(s, in, out)
	if err != nil || key == "" {
		return next, err
	}
	for i, n := range next {
		if _, ok := n.request(key); !ok {
			next[i] = n.withRequest(request{Key: key, Lease: leaseKey(out.LeaseID)})
		}
	}
	return next, nil
}

// leaseEnded applies an acquire answered "your request was granted lease
// L, which has ended since": two events, the grant (at an unknown log time
// within the call, so a status may have listed L before this answer: it
// counts as a phantom, like an indefinite acquire) and the end, before the
// (unknown) log time of the answer; and the request is L's.
func (sp lockSpec) leaseEnded(s lockState, in LockInput, out LockOutput) ([]lockState, error) {
	key := requestKey(in)
	id := leaseKey(out.LeaseID)
	if r, ok := s.request(key); ok && r.Lease != id {
		return nil, fmt.Errorf("%w: %s answered %s, first %s", errRequestRegranted, in.RequestID, id, r.Lease)
	}
	if s.phantoms < phantomsUnbounded {
		s.phantoms++
	}
	next, err := sp.notHolder(s, id, 0)
	if err != nil {
		return nil, err
	}
	for i, n := range next {
		// The grant came before this answer, so later grants exceed it.
		n.tokenFloor = max(n.tokenFloor, out.Token+1)
		if key != "" {
			n = n.withRequest(request{Key: key, Lease: id, Released: true})
		}
		next[i] = n
	}
	return next, nil
}

// grantStep applies a definite grant.
func (sp lockSpec) grantStep(s lockState, in LockInput, out LockOutput) ([]lockState, error) {
	// A grant made at log time G expires at G+TTL. A reply whose LogTime
	// is later than that G reports a grant made earlier: a queued grant
	// found by the cancel that raced it, or a retried request answered
	// from the dedupe table (possibly for a grant that already ended).
	// However little later: a grant found 1ms late may already have been
	// listed by a status decided in that 1ms. An immediate grant has G
	// equal to its LogTime exactly, whole-ms rounding included (TTLs are
	// whole ms), so no slack is needed to keep it on the strict path.
	if in.TTLNs > 0 && (out.ExpiresAtNs-in.TTLNs < out.LogTimeNs || in.renewedAt != 0) {
		// A marked grant that looks immediate is a late answer showing
		// a renew made at its log time (markRenewed).
		return sp.lateGrant(s, in, out, out.ExpiresAtNs-in.TTLNs)
	}
	// A lease the model already knows (delivered, or revealed by a status)
	// is a retry answered from the dedupe table, never a new grant, even
	// when it looks immediate: log time may not have moved since the grant
	// (or a renew, which the answer's expiry reflects), as when a leader's
	// clock ran ahead and log time waits for the others to catch up.
	if sp.isReplay(s, in, out) {
		return sp.lateGrant(s, in, out, min(out.ExpiresAtNs-in.TTLNs, out.LogTimeNs))
	}
	n, err := sp.advance(s, out.LogTimeNs)
	if err != nil {
		return nil, err
	}
	floor := n.tokenFloor
	if in.retried {
		// It may replay the grant to an earlier attempt left in doubt,
		// made at this log time before the grants seen since.
		floor = n.floorBefore
	}
	if out.Token < floor {
		return nil, fmt.Errorf("%w: granted #%d, already saw #%d", errTokenOrder, out.Token, floor-1)
	}
	if n.find(leaseKey(out.LeaseID)) >= 0 {
		return nil, fmt.Errorf("%w: lease %s granted again", errConflict, leaseKey(out.LeaseID))
	}
	n, err = sp.admit(n, lease{ID: leaseKey(out.LeaseID), Mode: normalizeMode(in.Mode), Token: out.Token, ExpiresAt: out.ExpiresAtNs, TTL: in.TTLNs, Grace: in.GraceNs}, in.Permits)
	if err != nil {
		return nil, err
	}
	return []lockState{n}, nil
}

// isReplay reports whether a grant names a lease the model knows that
// only a retry of its request could be answered: the request's own grant,
// or a phantom a status revealed (whose request the model cannot name).
// Without a request id the server replays nothing.
func (sp lockSpec) isReplay(s lockState, in LockInput, out LockOutput) bool {
	key, id := requestKey(in), leaseKey(out.LeaseID)
	i := s.find(id)
	if key == "" || i < 0 {
		return false
	}
	r, ok := s.request(key)
	return ok && r.Lease == id || s.leases[i].Undelivered
}

// admit adds l, live at n.logTime, to n: a conflicting lease that is
// certainly live makes that impossible; one that is only maybe live (open
// or within the slack) is proven dead by the grant and forgotten. A grant
// of a semaphore of permits > 1 is admitSemaphore's.
func (sp lockSpec) admit(n lockState, l lease, permits int64) (lockState, error) {
	if permits > 1 {
		return sp.admitSemaphore(n, l, permits)
	}
	keep := make([]lease, 0, len(n.leases)+1)
	for _, o := range n.leases {
		if !conflicts(o.Mode, l.Mode) {
			keep = append(keep, o)
			continue
		}
		if sp.certainlyLive(o, n.logTime) {
			return n, fmt.Errorf("%w: %s %s (#%d) held at %s while %s %s (#%d) lives until %s",
				errConflict, shortMode(l.Mode), l.ID, l.Token, fmtTime(n.logTime), shortMode(o.Mode), o.ID, o.Token, fmtTime(o.end()))
		}
	}
	n.leases = keep
	n.tokenFloor = max(n.tokenFloor, l.Token+1)
	return n.with(l), nil
}

// lateGrant applies a grant made at log time granted, reported at the
// later out.LogTime. Its effect is placed at the grant when the
// linearization allows (the grant happened inside the op's interval), else
// now: a retry's grant may predate the retry's call, and then it can only
// be revealed, like a phantom. Other grants may have come in between, so
// its token need only be new, not the highest. Log time is not advanced
// to out.LogTime, which only forgoes a check.
func (sp lockSpec) lateGrant(s lockState, in LockInput, out LockOutput, granted int64) ([]lockState, error) {
	if out.LogTimeNs < s.logTime {
		return nil, fmt.Errorf("%w: %s after %s", errLogTimeBackwards, fmtTime(out.LogTimeNs), fmtTime(s.logTime))
	}
	at := max(s.logTime, granted)
	if in.renewedAt != 0 {
		// The answer shows the lease as a later renew left it (a replay
		// reads the lease as it is now), so the grant came at some log
		// time up to that renew: here, or later.
		at = s.logTime
	}
	n, err := sp.advance(s, at)
	if err != nil {
		return nil, err
	}
	l := lease{ID: leaseKey(out.LeaseID), Mode: normalizeMode(in.Mode), Token: out.Token, ExpiresAt: out.ExpiresAtNs, TTL: in.TTLNs}
	if i := n.find(l.ID); i >= 0 {
		k := n.leases[i]
		if k.Token != l.Token || k.Mode != l.Mode {
			return nil, fmt.Errorf("%w: %s reported %s#%d, known %s#%d", errTokenMismatch, l.ID, shortMode(l.Mode), l.Token, shortMode(k.Mode), k.Token)
		}
		// Already known (a status revealed it); now a client holds it.
		k.Undelivered = false
		if k.Grace == 0 {
			k.Grace = in.GraceNs
		}
		return []lockState{n.with(k)}, nil
	}
	if slices.ContainsFunc(n.leases, func(o lease) bool { return o.Token == l.Token }) {
		return nil, fmt.Errorf("%w: %s shares #%d", errTokenOrder, l.ID, l.Token)
	}
	if !sp.certainlyValid(l, n.logTime) && in.GraceNs > 0 {
		// Reported expired (expires_in 0): in its grace window, or over.
		// Its expiry is only bounded above by the answer, so the window's
		// end too: it may have made way for others already, and never
		// blocks anyone (as after an indefinite release).
		l.Grace, l.MaybeGone = in.GraceNs, true
	}
	if !sp.certainlyLive(l, n.logTime) {
		// Over (or nearly) by now: nothing to hold against anyone.
		n.tokenFloor = max(n.tokenFloor, l.Token+1)
		if !sp.certainlyExpired(l, n.logTime) {
			n = n.with(l)
		}
		return []lockState{n}, nil
	}
	if in.renewedAt != 0 {
		// If a renew set the expiry shown, the grant came at G in [now,
		// renewedAt], so lives until at least now+TTL; if none did, the
		// answer shows the grant's own expiry, and a retry's grant may
		// predate now (multiShard seed 448). So it lives until at least
		// the sooner of the two, and maybe later. Only a holder live
		// through renewedAt surely overlapped G; one that expires sooner
		// may have made way for it.
		l.ExpiresAt, l.Open, l.Grace = min(out.ExpiresAtNs, n.logTime+in.TTLNs), true, in.GraceNs
		judged := n
		judged.logTime = max(n.logTime, in.renewedAt)
		judged, err = sp.admit(judged, l, in.Permits)
		if err != nil {
			return nil, err
		}
		judged.logTime = n.logTime
		return []lockState{judged}, nil
	}
	l.Grace = in.GraceNs
	n, err = sp.admit(n, l, in.Permits)
	if err != nil {
		return nil, err
	}
	return []lockState{n}, nil
}

// liveAt advances s to logTime, at which op (a release or renew) on lease
// id succeeded, and finds that lease, which must then be live.
func (sp lockSpec) liveAt(s lockState, logTime int64, op, id string) (lockState, int, error) {
	n, err := sp.advance(s, logTime)
	if err != nil {
		return n, -1, err
	}
	i := n.find(id)
	if i < 0 {
		return n, -1, fmt.Errorf("%w: %s of %s", errNotLive, op, id)
	}
	return n, i, nil
}

func (sp lockSpec) release(s lockState, in LockInput, out LockOutput) ([]lockState, error) {
	if out.Unknown {
		i := s.find(leaseKey(in.LeaseID))
		if i < 0 {
			return []lockState{s}, nil
		}
		return []lockState{s, s.without(i)}, nil
	}
	switch out.Code {
	case "":
		n, i, err := sp.liveAt(s, out.LogTimeNs, "release", leaseKey(in.LeaseID))
		if err != nil {
			return nil, err
		}
		return []lockState{n.without(i).released(leaseKey(in.LeaseID))}, nil
	case CodeNotHolder:
		return sp.notHolder(s, leaseKey(in.LeaseID), out.LogTimeNs)
	}
	return []lockState{s}, nil
}

func (sp lockSpec) renew(s lockState, in LockInput, out LockOutput) ([]lockState, error) {
	if out.Unknown {
		i := s.find(leaseKey(in.LeaseID))
		if i < 0 {
			return []lockState{s}, nil
		}
		// If the renew took effect it did so at some log time >= s.logTime
		// on a live lease, so the lease is live until s.logTime+ttl and
		// possibly later.
		l := s.leases[i]
		if in.TTLNs != 0 {
			l.TTL = in.TTLNs
			l.Grace = min(l.Grace, l.TTL)
		}
		l.ExpiresAt = s.logTime + l.TTL
		l.Open = true
		return []lockState{s, s.with(l)}, nil
	}
	switch out.Code {
	case "":
		n, i, err := sp.liveAt(s, out.LogTimeNs, "renew", leaseKey(in.LeaseID))
		if err != nil {
			return nil, err
		}
		l := n.leases[i]
		if out.Token != 0 && out.Token != l.Token {
			return nil, fmt.Errorf("%w: renew of %s reported #%d, lease has #%d", errTokenMismatch, l.ID, out.Token, l.Token)
		}
		// A renew moves the expiry to its log time plus the TTL (its own, or
		// for TTL 0 the lease's, unless an indefinite renew may have changed
		// that), whole milliseconds apart at most.
		ttl := in.TTLNs
		if ttl == 0 && !l.Open {
			ttl = l.TTL
		}
		if in.TTLNs != 0 {
			l.TTL = in.TTLNs
			l.Grace = min(l.Grace, l.TTL) // the server cuts it to the new TTL
		}
		if want := out.LogTimeNs + ttl; ttl != 0 && (out.ExpiresAtNs < want-sp.slack || out.ExpiresAtNs > want+sp.slack) {
			return nil, fmt.Errorf("%w: renew of %s at %s answered %s, want %s", errRenewExpiry, l.ID,
				fmtTime(out.LogTimeNs), fmtTime(out.ExpiresAtNs), fmtTime(want))
		}
		l.ExpiresAt = out.ExpiresAtNs
		l.Open, l.MaybeGone = false, false
		return []lockState{n.with(l)}, nil
	case CodeNotHolder:
		return sp.notHolder(s, leaseKey(in.LeaseID), out.LogTimeNs)
	}
	return []lockState{s}, nil
}

// notHolder applies a definite not_holder answer about lease id. A LogTime of
// 0 means the reply did not carry one (the HTTP error body has none): the
// answer was then decided at some unknown log time >= s.logTime at which
// the lease had expired, so log time must have reached its expiry (less
// the slack); advancing to it is a deduction, not a guess.
func (sp lockSpec) notHolder(s lockState, id string, logTime int64) ([]lockState, error) {
	if logTime == 0 {
		i := s.find(id)
		if i < 0 {
			return []lockState{s}, nil
		}
		if s.leases[i].MaybeGone || s.leases[i].Undelivered {
			// It may have been released at any log time, which the
			// answer then reflects: nothing to deduce about log time.
			return []lockState{s.without(i)}, nil
		}
		n, err := sp.advance(s, max(s.logTime, s.leases[i].end()-sp.slack))
		if err != nil {
			return nil, err
		}
		if i = n.find(id); i >= 0 {
			n = n.without(i)
		}
		return []lockState{n}, nil
	}
	n, err := sp.advance(s, logTime)
	if err != nil {
		return nil, err
	}
	i := n.find(id)
	if i < 0 {
		return []lockState{n}, nil
	}
	if l := n.leases[i]; sp.certainlyLive(l, logTime) {
		return nil, fmt.Errorf("%w: %s lives until %s, answered at %s", errFalseNotHolder, id, fmtTime(l.end()), fmtTime(logTime))
	}
	// Maybe live only (open, or within the slack): the answer proves it dead.
	return []lockState{n.without(i)}, nil
}

func (sp lockSpec) status(s lockState, out LockOutput) ([]lockState, error) {
	if out.Unknown || out.Code != "" {
		return []lockState{s}, nil
	}
	n, err := sp.advance(s, out.LogTimeNs)
	if err != nil {
		return nil, err
	}
	// Holders certainly expired at the answer's log time hold nothing; a
	// server listing them shows stale bookkeeping, not a second owner.
	reported := make(map[string]HolderView, len(out.Holders))
	exclusive := 0
	for _, h := range out.Holders {
		if max(h.ExpiresAtNs, h.GraceUntilNs) <= n.logTime-sp.slack {
			continue
		}
		if _, dup := reported[h.Fingerprint]; dup {
			return nil, fmt.Errorf("%w: %s listed twice", errStatusMismatch, h.Fingerprint)
		}
		reported[h.Fingerprint] = h
		if normalizeMode(h.Mode) == Exclusive {
			exclusive++
		}
	}
	if err := statusHoldersFit(len(reported), exclusive, out.Permits); err != nil {
		return nil, err
	}
	next := make([]lease, 0, len(reported))
	for _, l := range n.leases {
		h, ok := reported[l.ID]
		if !ok {
			if sp.certainlyLive(l, n.logTime) {
				return nil, fmt.Errorf("%w: %s missing, lives until %s", errStatusMismatch, l.ID, fmtTime(l.end()))
			}
			continue // maybe live only, and now proven dead
		}
		delete(reported, l.ID)
		if h.Token != l.Token || normalizeMode(h.Mode) != l.Mode {
			return nil, fmt.Errorf("%w: %s reported %s#%d, granted %s#%d", errStatusMismatch, l.ID, shortMode(h.Mode), h.Token, shortMode(l.Mode), l.Token)
		}
		if h.GraceUntilNs != 0 {
			// In its grace window: the TTL ran out by now, and the window
			// ends at expiry plus grace (learnt here for a phantom).
			if l.Grace == 0 && l.Undelivered {
				l.Grace = h.GraceUntilNs - l.ExpiresAt
			}
			expired := h.GraceUntilNs - l.Grace
			if l.Grace == 0 || expired > n.logTime+sp.slack || expired < l.ExpiresAt-sp.slack ||
				!l.Open && expired > l.ExpiresAt+sp.slack {
				return nil, fmt.Errorf("%w: %s reported in its grace window until %s, known expiry %s grace %s",
					errStatusMismatch, l.ID, fmtTime(h.GraceUntilNs), fmtTime(l.ExpiresAt), fmtTime(l.Grace))
			}
			if l.Open {
				l.ExpiresAt, l.Open = expired, false
			}
		} else {
			tooEarly := h.ExpiresAtNs < l.ExpiresAt-sp.slack
			tooLate := !l.Open && h.ExpiresAtNs > l.ExpiresAt+sp.slack
			if tooEarly || tooLate {
				return nil, fmt.Errorf("%w: %s reported expiry %s, known %s", errStatusMismatch, l.ID, fmtTime(h.ExpiresAtNs), fmtTime(l.ExpiresAt))
			}
			if l.Open {
				l.ExpiresAt, l.Open = h.ExpiresAtNs, false
			}
		}
		// Listed, so not released (yet): a phantom, being a new grant,
		// never carries the id of a lease the model knows.
		l.MaybeGone = false
		next = append(next, l)
	}
	// What is left can only be phantoms revealed by this status.
	for _, id := range slices.Sorted(maps.Keys(reported)) {
		h := reported[id]
		if n.phantoms == 0 {
			return nil, fmt.Errorf("%w: unknown holder %s", errStatusMismatch, id)
		}
		if n.phantoms < phantomsUnbounded {
			n.phantoms--
		}
		if slices.ContainsFunc(next, func(l lease) bool { return l.Token == h.Token }) {
			return nil, fmt.Errorf("%w: %s shares #%d", errTokenOrder, id, h.Token)
		}
		// Later grants come after this phantom in log order, so they must
		// exceed its token too.
		n.tokenFloor = max(n.tokenFloor, h.Token+1)
		phantom := lease{ID: id, Mode: normalizeMode(h.Mode), Token: h.Token, ExpiresAt: h.ExpiresAtNs, Undelivered: true}
		if h.GraceUntilNs != 0 {
			// Its expiry is unknown (at most now): the window's end is
			// what bounds it.
			phantom.Grace = h.GraceUntilNs - h.ExpiresAtNs
		}
		next = append(next, phantom)
	}
	slices.SortFunc(next, func(a, b lease) int { return cmp.Compare(a.ID, b.ID) })
	n.leases = next
	return []lockState{n}, nil
}

func (s lockState) equal(o lockState) bool {
	return s.logTime == o.logTime && s.tokenFloor == o.tokenFloor && s.floorBefore == o.floorBefore && s.phantoms == o.phantoms &&
		slices.Equal(s.leases, o.leases) && slices.Equal(s.requests, o.requests)
}

// hash is consistent with equal: it covers a subset of the fields equal
// compares (lease ids and modes are left out: tokens tell leases apart),
// and allocates nothing, because Porcupine hashes every state it caches.
func (s lockState) hash() uint64 {
	h := newStateHash()
	h.add(uint64(s.logTime))
	h.add(s.tokenFloor)
	h.add(s.floorBefore)
	h.add(uint64(s.phantoms))
	for _, l := range s.leases {
		h.add(l.Token)
		h.add(uint64(l.ExpiresAt))
		h.add(uint64(l.TTL))
		h.add(uint64(l.Grace))
		h.add(uint64(boolBit(l.Open) | boolBit(l.MaybeGone)<<1 | boolBit(l.Undelivered)<<2))
	}
	h.add(uint64(len(s.requests)))
	return uint64(h)
}

// stateHash is FNV-1a over 64-bit words.
type stateHash uint64

func newStateHash() stateHash { return 14695981039346656037 }

func (h *stateHash) add(v uint64) {
	*h = (*h ^ stateHash(v)) * 1099511628211
}

func boolBit(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// String renders the state for the visualization: log time, next legal
// token, phantom bound (if any), then holders ("≥" marks an open expiry, "?" a lease
// an indefinite release may have ended).
func (s lockState) String() string {
	parts := make([]string, len(s.leases))
	for i, l := range s.leases {
		bound := "<"
		if l.Open {
			bound = "≥"
		}
		doubt := ""
		if l.MaybeGone || l.Undelivered {
			doubt = "?"
		}
		parts[i] = fmt.Sprintf("%s%s:%s#%d%s%s", doubt, l.ID, shortMode(l.Mode), l.Token, bound, fmtTime(l.ExpiresAt))
	}
	phantoms := ""
	if s.phantoms > 0 {
		phantoms = fmt.Sprintf(" ph=%d", s.phantoms)
	}
	return fmt.Sprintf("t=%s tok≥%d%s {%s}", fmtTime(s.logTime), s.tokenFloor, phantoms, strings.Join(parts, " "))
}
