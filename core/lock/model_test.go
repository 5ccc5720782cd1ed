package lock

import (
	"slices"
	"time"
	"unicode/utf8"
)

// refModel is the reference the property tests compare State against: the
// same semantics written the slow, obvious way (plain slices, linear scans,
// no interning, no heap, no inline holder), so a bug in the clever storage of
// State shows up as a difference.
type refModel struct {
	cfg       Config
	now       int64
	term      uint64
	mono      int64
	lastToken uint64
	res       map[string]*refResource
	// dedupe holds remembered acquires in the order they were first seen.
	dedupe []refDedupe
	// settled holds how queued requests ended, oldest first.
	settled []refDedupe
	// unclaimed maps the queued grants no client has shown it received to
	// the attempt that owned them.
	unclaimed map[LeaseID]refClaim
	// suspects is the suspect list of the entry being applied.
	suspects []string
}

type refResource struct {
	holders []Lease // in grant order
	queue   []refWaiter
	// permits is the semaphore's N, 0 for a plain lock.
	permits uint32
}

// refAttempt is one attempt waiting for a queued request.
type refAttempt struct {
	id          LeaseID
	host        string
	incarnation uint64
	deadline    int64
}

// refClaim lists the attempts that may still tell a grant's caller.
type refClaim struct {
	attempts []refAttempt
}

type refWaiter struct {
	id       LeaseID
	client   string
	mode     Mode
	ttlMs    int64
	graceMs  int64
	attempts []refAttempt
}

// deadline is the latest of the waiter's attempts' deadlines.
func (w refWaiter) deadline() int64 {
	var d int64
	for _, a := range w.attempts {
		d = max(d, a.deadline)
	}
	return d
}

type refDedupe struct {
	client, request string
	at              int64
	resource        string
	lease           Lease
	granted         bool
	policy          Policy
	permits         uint32
}

func newRefModel(cfg Config) *refModel {
	return &refModel{cfg: cfg, res: make(map[string]*refResource), unclaimed: make(map[LeaseID]refClaim)}
}

// valid restates the command rules of the API in the simplest terms.
func (m *refModel) valid(c *Command) bool {
	id := func(s string, required bool) bool {
		if s == "" {
			return !required
		}
		return len(s) <= m.cfg.MaxIDLen && utf8.ValidString(s)
	}
	ttlOK := func(ms int64) bool {
		return ms >= m.cfg.MinTTL.Milliseconds() && ms >= 1 && ms <= m.cfg.MaxTTL.Milliseconds()
	}
	if !id(c.Host, false) || len(c.Suspects) > 64 {
		return false
	}
	if c.Permits != 0 && (c.Op != OpAcquire || c.Permits > 1024 || c.Permits > 1 && c.Mode == Shared) {
		return false
	}
	for _, h := range c.Suspects {
		if !id(h, true) {
			return false
		}
	}
	switch c.Op {
	case OpTick:
		return true
	case OpHello:
		return c.Host != "" && c.Incarnation != 0
	case OpStatus:
		return id(c.Resource, true)
	case OpRelease, OpCancel:
		return id(c.Resource, true) && !c.LeaseID.IsZero()
	case OpOrphan:
		return id(c.Resource, true) && !c.LeaseID.IsZero() && (!c.Owner.IsZero() || c.Host != "")
	case OpRenew:
		return id(c.Resource, true) && !c.LeaseID.IsZero() && (c.TTLMs == 0 || ttlOK(c.TTLMs))
	case OpAcquire:
		return id(c.Resource, true) && id(c.ClientID, true) && id(c.RequestID, false) &&
			(c.Mode == Exclusive || c.Mode == Shared) && (c.Policy == FIFO || c.Policy == Throughput) &&
			ttlOK(c.TTLMs) && c.WaitMs >= 0 && c.WaitMs <= m.cfg.MaxWait.Milliseconds() &&
			!c.LeaseID.IsZero() && c.GraceMs >= 0 && c.GraceMs <= c.TTLMs
	}
	return false
}

// apply is the reference for State.Apply.
func (m *refModel) apply(e Entry) (Result, []Event) {
	var ev []Event
	emit := func(e2 Event) {
		e2.Index, e2.LogTime = e.Index, m.now
		ev = append(ev, e2)
	}
	c := e.Command
	m.suspects = nil
	if m.valid(&Command{Op: OpTick, Host: c.Host, Suspects: c.Suspects}) {
		m.suspects = c.Suspects
	}
	if e.Term != m.term {
		m.term, m.mono = e.Term, c.Mono
	} else if c.Mono > m.mono {
		m.now += c.Mono - m.mono
		m.mono = c.Mono
	}
	m.expire(emit)

	var res Result
	if !m.valid(&c) {
		res = Result{Code: Invalid}
	} else {
		res = m.command(&c, emit)
	}
	// Forget remembered acquires older than the window or beyond the cap.
	cutoff := m.now - int64(m.cfg.DedupeWindow)
	for len(m.dedupe) > 0 && (m.dedupe[0].at <= cutoff || len(m.dedupe) > m.cfg.DedupeMax) {
		m.dedupe = m.dedupe[1:]
	}
	for len(m.settled) > 0 && (m.settled[0].at <= cutoff || len(m.settled) > m.cfg.DedupeMax) {
		m.settled = m.settled[1:]
	}
	res.LogTime = m.now
	return res, ev
}

type emitFunc func(Event)

// expire frees due leases resource by resource, earliest (expiry, token)
// first, dropping each resource's due holders newest first.
func (m *refModel) expire(emit emitFunc) {
	type due struct {
		name  string
		at    int64
		token uint64
	}
	var dues []due
	for name, r := range m.res {
		first := slices.MinFunc(r.holders, func(a, b Lease) int {
			if refDue(a) != refDue(b) {
				return cmpInt(refDue(a), refDue(b))
			}
			return cmpInt(a.Token, b.Token)
		})
		if refDue(first) <= m.now {
			dues = append(dues, due{name, refDue(first), first.Token})
		}
	}
	slices.SortFunc(dues, func(a, b due) int {
		if a.at != b.at {
			return cmpInt(a.at, b.at)
		}
		return cmpInt(a.token, b.token)
	})
	for _, d := range dues {
		r := m.res[d.name]
		dropped := false
		for i := len(r.holders) - 1; i >= 0; i-- {
			if h := r.holders[i]; refDue(h) <= m.now {
				// A grace window starts at expiry unless it is over already.
				if end := h.ExpiresAt + h.GraceMs*int64(time.Millisecond); h.GraceUntil == 0 && end > m.now {
					r.holders[i].GraceUntil = end
					emit(Event{Kind: EventGrace, Resource: d.name, Lease: r.holders[i]})
					continue
				}
				r.holders = slices.Delete(r.holders, i, i+1)
				delete(m.unclaimed, h.ID)
				emit(Event{Kind: EventExpire, Resource: d.name, Lease: h})
				dropped = true
			}
		}
		m.settle(d.name, emit)
		if dropped { // a lease entering its grace window frees no permit
			m.permitFreed(d.name, emit)
		}
	}
}

// refDue is when a holder is due: its expiry, or in its grace window the
// window's end.
func refDue(h Lease) int64 {
	if h.GraceUntil != 0 {
		return h.GraceUntil
	}
	return h.ExpiresAt
}

// noGrace strips what a remembered answer does not keep of a lease.
func noGrace(l Lease) Lease {
	l.GraceMs, l.GraceUntil = 0, 0
	return l
}

func cmpInt[T int64 | uint64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// settle hands a resource to its queue head(s) after holders or waiters left
// and forgets it once nobody holds it.
func (m *refModel) settle(name string, emit emitFunc) {
	r := m.res[name]
	for len(r.queue) > 0 {
		if len(m.suspects) > 0 {
			r.queue[0].attempts = slices.DeleteFunc(r.queue[0].attempts, func(a refAttempt) bool { return slices.Contains(m.suspects, a.host) })
		}
		w := r.queue[0]
		if len(w.attempts) == 0 || w.deadline() <= m.now {
			m.drop(name, 0, emit)
			continue
		}
		if !r.fits(w.mode) {
			break
		}
		r.queue = r.queue[1:]
		l := m.grant(name, w.id, w.client, w.mode, w.ttlMs, w.graceMs, &w, emit)
		m.remember(refDedupe{at: m.now, lease: l, granted: true})
	}
	if len(r.holders) == 0 {
		delete(m.res, name)
		emit(Event{Kind: EventFreed, Resource: name})
	}
}

// permitFreed says, after a holder of a semaphore left, that a permit is
// free with nobody queued (the throughput policy's racers wake on it).
func (m *refModel) permitFreed(name string, emit emitFunc) {
	if r := m.res[name]; r != nil && r.permits > 1 && len(r.queue) == 0 && len(r.holders) > 0 && len(r.holders) < int(r.permits) {
		emit(Event{Kind: EventFreed, Resource: name})
	}
}

// drop removes waiter i of name without granting it.
func (m *refModel) drop(name string, i int, emit emitFunc) {
	r := m.res[name]
	w := r.queue[i]
	r.queue = slices.Delete(r.queue, i, i+1)
	l := Lease{ID: w.id, ClientID: w.client, Mode: w.mode}
	emit(Event{Kind: EventCancel, Resource: name, Lease: l})
	m.remember(refDedupe{at: m.now, resource: name, lease: l})
}

// fits reports whether mode is compatible with every current holder; on
// a semaphore, whether an exclusive request finds a permit free.
func (r *refResource) fits(mode Mode) bool {
	if r.permits > 1 {
		return mode == Exclusive && len(r.holders) < int(r.permits)
	}
	for _, h := range r.holders {
		if h.Mode == Exclusive || mode == Exclusive {
			return false
		}
	}
	return true
}

func (m *refModel) grant(name string, id LeaseID, client string, mode Mode, ttlMs, graceMs int64, from *refWaiter, emit emitFunc) Lease {
	m.lastToken++
	l := Lease{ID: id, ClientID: client, Mode: mode, Token: m.lastToken,
		ExpiresAt: m.now + ttlMs*int64(time.Millisecond), TTLMs: ttlMs, GraceMs: graceMs}
	m.res[name].holders = append(m.res[name].holders, l)
	ev := Event{Kind: EventGrant, Resource: name, Lease: l, Permits: m.res[name].permits}
	if from != nil {
		ev.Queued = true
		for _, a := range from.attempts {
			if !slices.Contains(ev.Hosts, a.host) {
				ev.Hosts = append(ev.Hosts, a.host)
			}
		}
		m.unclaimed[id] = refClaim{attempts: slices.Clone(from.attempts)}
	}
	emit(ev)
	return l
}

func (m *refModel) find(name string, id LeaseID) (r *refResource, holder, waiter int) {
	r = m.res[name]
	if r == nil {
		return nil, -1, -1
	}
	holder = slices.IndexFunc(r.holders, func(h Lease) bool { return h.ID == id })
	waiter = slices.IndexFunc(r.queue, func(w refWaiter) bool { return w.id == id })
	return r, holder, waiter
}

func (m *refModel) command(c *Command, emit emitFunc) Result {
	switch c.Op {
	case OpAcquire:
		if c.RequestID != "" {
			for _, d := range m.dedupe {
				if d.client == c.ClientID && d.request == c.RequestID {
					if d.resource != c.Resource || d.lease.Mode != c.Mode || d.lease.TTLMs != c.TTLMs || d.policy != c.Policy ||
						max(d.permits, 1) != max(c.Permits, 1) {
						return Result{Code: RequestIDReused}
					}
					return m.replay(d, c, emit)
				}
			}
		}
		res := m.acquire(c, emit)
		// A plain refusal changed nothing, so only grants and queued
		// requests are remembered; a refused retry is judged afresh.
		if c.RequestID != "" && res.Code == OK && (res.Granted || res.Queued) {
			d := refDedupe{client: c.ClientID, request: c.RequestID, at: m.now, resource: c.Resource,
				lease: Lease{ID: c.LeaseID, ClientID: c.ClientID, Mode: c.Mode, TTLMs: c.TTLMs}, granted: res.Granted, policy: c.Policy,
				permits: c.Permits}
			if res.Granted {
				d.lease = noGrace(res.Lease)
			}
			m.dedupe = append(m.dedupe, d)
		}
		return res
	case OpRelease:
		r, h, _ := m.find(c.Resource, c.LeaseID)
		if h < 0 {
			return Result{Code: NotHolder}
		}
		l := r.holders[h]
		r.holders = slices.Delete(r.holders, h, h+1)
		delete(m.unclaimed, l.ID)
		emit(Event{Kind: EventRelease, Resource: c.Resource, Lease: l})
		m.settle(c.Resource, emit)
		m.permitFreed(c.Resource, emit)
		return Result{Lease: l}
	case OpOrphan:
		r, h, _ := m.find(c.Resource, c.LeaseID)
		cl, unclaimed := m.unclaimed[c.LeaseID]
		if h < 0 || !unclaimed {
			return Result{Code: NotHolder}
		}
		var left []refAttempt
		for _, a := range cl.attempts {
			gone := (c.Host == "" && c.Owner.IsZero()) || (!c.Owner.IsZero() && a.id == c.Owner) ||
				(c.Host != "" && a.host == c.Host && a.incarnation != c.Incarnation)
			if !gone {
				left = append(left, a)
			}
		}
		if len(left) > 0 {
			m.unclaimed[c.LeaseID] = refClaim{attempts: left}
			return Result{Code: NotHolder}
		}
		l := r.holders[h]
		r.holders = slices.Delete(r.holders, h, h+1)
		delete(m.unclaimed, l.ID)
		emit(Event{Kind: EventRelease, Resource: c.Resource, Lease: l})
		m.settle(c.Resource, emit)
		m.permitFreed(c.Resource, emit)
		return Result{Lease: l}
	case OpHello:
		earlier := func(a refAttempt) bool { return a.host == c.Host && a.incarnation != c.Incarnation }
		var names []string
		for name, r := range m.res {
			if slices.ContainsFunc(r.queue, func(w refWaiter) bool { return slices.ContainsFunc(w.attempts, earlier) }) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			r := m.res[name]
			for i := len(r.queue) - 1; i >= 0; i-- {
				r.queue[i].attempts = slices.DeleteFunc(r.queue[i].attempts, earlier)
				if len(r.queue[i].attempts) == 0 {
					m.drop(name, i, emit)
				}
			}
			m.settle(name, emit)
		}
		return Result{}
	case OpRenew:
		r, h, _ := m.find(c.Resource, c.LeaseID)
		if h < 0 {
			return Result{Code: NotHolder}
		}
		l := &r.holders[h]
		delete(m.unclaimed, l.ID)
		if c.TTLMs != 0 {
			l.TTLMs = c.TTLMs
		}
		kind := EventRenew
		if l.GraceUntil != 0 {
			kind = EventRevive
		}
		l.GraceMs, l.GraceUntil = min(l.GraceMs, l.TTLMs), 0
		l.ExpiresAt = m.now + l.TTLMs*int64(time.Millisecond)
		emit(Event{Kind: kind, Resource: c.Resource, Lease: *l})
		return Result{Lease: *l}
	case OpCancel:
		r, h, w := m.find(c.Resource, c.LeaseID)
		switch {
		case w >= 0:
			if !c.Owner.IsZero() {
				r.queue[w].attempts = slices.DeleteFunc(r.queue[w].attempts, func(a refAttempt) bool { return a.id == c.Owner })
				if len(r.queue[w].attempts) > 0 {
					return Result{Queued: true, Position: w + 1, Lease: Lease{ID: c.LeaseID}}
				}
			}
			m.drop(c.Resource, w, emit)
			m.settle(c.Resource, emit)
			return Result{Position: w + 1}
		case h >= 0:
			if c.CallerGone {
				orphan := Command{Op: OpOrphan, Resource: c.Resource, LeaseID: c.LeaseID, Owner: c.Owner}
				if res := m.command(&orphan, emit); res.Code == OK {
					return Result{}
				}
				return Result{Granted: true, Lease: r.holders[h]}
			}
			delete(m.unclaimed, c.LeaseID)
			return Result{Granted: true, Lease: r.holders[h]}
		}
		return m.settledResult(c.LeaseID)
	case OpStatus:
		st := m.status(c.Resource)
		return Result{Status: &st}
	}
	return Result{}
}

func (m *refModel) acquire(c *Command, emit emitFunc) Result {
	if r, h, w := m.find(c.Resource, c.LeaseID); r != nil && (h >= 0 || w >= 0) {
		if h >= 0 {
			return Result{Granted: true, Lease: r.holders[h]}
		}
		return Result{Queued: true, Position: w + 1, Lease: Lease{ID: c.LeaseID, ClientID: c.ClientID, Mode: c.Mode}}
	}
	if m.res[c.Resource] != nil {
		m.settle(c.Resource, emit) // dead waiters at the head never block
	}
	r := m.res[c.Resource]
	if r != nil && max(r.permits, 1) != max(c.Permits, 1) {
		return Result{Code: PermitsMismatch, Status: &Status{Resource: c.Resource, Permits: r.permits}}
	}
	if r == nil {
		if len(m.res) >= m.cfg.MaxResources {
			return Result{Code: TooManyLocks}
		}
		r = &refResource{}
		if c.Permits > 1 {
			r.permits = c.Permits
		}
		m.res[c.Resource] = r
	}
	if r.fits(c.Mode) && len(r.queue) == 0 {
		return Result{Granted: true, Lease: m.grant(c.Resource, c.LeaseID, c.ClientID, c.Mode, c.TTLMs, c.GraceMs, nil, emit)}
	}
	if c.WaitMs == 0 || c.Policy == Throughput {
		return Result{}
	}
	if len(r.queue) >= m.cfg.MaxWaitersPerQueue {
		return Result{Code: QueueFull}
	}
	if cycle := m.refCycle(c.ClientID, c.Mode, c.Resource, len(r.queue)); cycle != nil {
		return Result{Code: Deadlock, Cycle: cycle}
	}
	deadline := m.now + c.WaitMs*int64(time.Millisecond)
	r.queue = append(r.queue, refWaiter{id: c.LeaseID, client: c.ClientID, mode: c.Mode, ttlMs: c.TTLMs, graceMs: c.GraceMs,
		attempts: []refAttempt{{id: c.LeaseID, host: c.Host, incarnation: c.Incarnation, deadline: deadline}}})
	l := Lease{ID: c.LeaseID, ClientID: c.ClientID, Mode: c.Mode}
	emit(Event{Kind: EventEnqueue, Resource: c.Resource, Lease: Lease{ID: c.LeaseID, ClientID: c.ClientID, Mode: c.Mode,
		ExpiresAt: m.now + c.WaitMs*int64(time.Millisecond)}})
	return Result{Queued: true, Position: len(r.queue), Lease: l}
}

// replay answers a retried acquire from what became of its first attempt.
func (m *refModel) replay(d refDedupe, c *Command, emit emitFunc) Result {
	if r, h, w := m.find(d.resource, d.lease.ID); r != nil {
		if h >= 0 {
			delete(m.unclaimed, d.lease.ID)
			return Result{Granted: true, Lease: r.holders[h]}
		}
		if w >= 0 {
			if cycle := m.refRevived(d.resource, w, c); cycle != nil {
				return Result{Code: Deadlock, Cycle: cycle}
			}
			q := &r.queue[w]
			joined := slices.ContainsFunc(q.attempts, func(a refAttempt) bool { return a.id == c.LeaseID })
			if c.WaitMs > 0 && !joined {
				before := q.deadline()
				deadline := m.now + c.WaitMs*int64(time.Millisecond)
				q.attempts = append(q.attempts, refAttempt{id: c.LeaseID, host: c.Host, incarnation: c.Incarnation, deadline: deadline})
				if deadline > before {
					emit(Event{Kind: EventJoin, Resource: d.resource, Lease: Lease{ID: q.id, ClientID: q.client, Mode: q.mode, ExpiresAt: deadline}})
				}
			}
			return Result{Queued: true, Position: w + 1, Lease: Lease{ID: d.lease.ID, ClientID: d.lease.ClientID, Mode: d.lease.Mode}}
		}
	}
	if d.granted {
		return Result{Code: LeaseEnded, Lease: d.lease}
	}
	return m.settledResult(d.lease.ID)
}

// remember records how a queued request ended; the first record wins.
func (m *refModel) remember(d refDedupe) {
	for _, old := range m.settled {
		if old.lease.ID == d.lease.ID {
			return
		}
	}
	d.lease = noGrace(d.lease)
	m.settled = append(m.settled, d)
}

// settledResult answers a cancel or retry for a queued request that ended.
func (m *refModel) settledResult(id LeaseID) Result {
	for _, d := range m.settled {
		if d.lease.ID == id && d.granted {
			return Result{Code: LeaseEnded, Lease: d.lease}
		}
	}
	return Result{}
}

// status lists holders and the waiters whose deadline has not passed.
func (m *refModel) status(name string) Status {
	st := Status{Resource: name}
	r := m.res[name]
	if r == nil {
		return st
	}
	st.Holders = slices.Clone(r.holders)
	st.Permits = r.permits
	for _, w := range r.queue {
		if w.deadline() > m.now {
			st.Queue = append(st.Queue, Waiter{ID: w.id, ClientID: w.client, Mode: w.mode, Deadline: w.deadline()})
		}
	}
	return st
}
