// Package lock is lockstep's replicated lock state machine. It is pure: no
// goroutines, clocks or I/O, and no randomness that can change a result (the
// resource index seeds its hash per process, as Go maps do, which only moves
// memory around). Time comes from the log (the
// leader's monotonic clock reading carried in each command), so applying the
// same entries in the same order gives byte-identical state on every replica.
package lock

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// State is the lock table of one Raft group. It is not safe for concurrent
// use; the FSM serialises Apply and snapshots.
type State struct {
	cfg       Config
	resources resourceTable
	expiry    expiryHeap
	clients   clientTable
	dedupe    dedupeTable
	// settled remembers how recent queued requests ended (granted or timed
	// out), by lease id, so a waiter's node that missed the event (it was
	// behind, or caught up from a snapshot) still learns the truth from its
	// cancel instead of reporting "not granted" for a grant that happened.
	settled   dedupeTable
	lastToken uint64
	clock     logClock
	lastIndex uint64
	leases    int
	waiters   int
	expired   uint64
	events    []Event
	// queuedByHost counts queued requests per host, so that a hello from a
	// host with nothing queued costs no scan.
	queuedByHost map[string]int
	// suspects is the suspect list of the entry being applied.
	suspects []string
	// unclaimed holds each grant made to a queued request that its client
	// has not shown it received (by renewing, by a retry answered with it,
	// or by a cancel that found it and told its caller). Only such a grant
	// may be released as an orphan, and only by its owner.
	unclaimed map[LeaseID]claim
	// dirty lists the resources whose queues a multi request's grant or
	// drop changed besides the one being settled (see settle).
	dirty []*resource
	// usage counts leases and queue entries per namespace and client, for
	// the quotas acquires carry (quota.go); nil until the first quota.
	usage usageTable
	// waitingOn indexes the queue entries by client, for the deadlock
	// search (deadlock.go).
	waitingOn waitIndex
	// grace holds the grace window of each holder that has one (grace.go);
	// nil until the first.
	grace map[LeaseID]graceLease
	// regranted is the grace-revive-regranted bug mode's memory of leases
	// whose window ended (bugs.go); always nil otherwise.
	regranted map[LeaseID]Lease
}

// logClock turns (term, leader monotonic reading) pairs into one
// non-decreasing log time. Within a term time advances by the leader's own
// clock; the first entry of a new term only sets the baseline, so the gap
// between leaders does not count and a lease is never shortened by a leader
// change: it keeps at least its remaining TTL from the new leader's first
// entry.
type logClock struct {
	now  int64
	term uint64
	mono int64
}

func (c *logClock) advance(term uint64, mono int64) (newTerm bool) {
	if term != c.term {
		c.term, c.mono = term, mono
		return true
	}
	if mono > c.mono {
		c.now += mono - c.mono
		c.mono = mono
	}
	return false
}

// New returns an empty state machine bounded by cfg.
func New(cfg Config) (*State, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	resources := newResourceTable()
	return &State{
		cfg:       cfg,
		resources: resources,
		expiry:    newExpiryHeap(resources.arena),
		clients:   newClientTable(),
		dedupe:    newDedupeTable(),
		settled:   newDedupeTable(),

		queuedByHost: make(map[string]int),
		unclaimed:    make(map[LeaseID]claim),
		waitingOn:    make(waitIndex),
	}, nil
}

// Config returns the limits this state machine applies.
func (s *State) Config() Config { return s.cfg }

// Apply applies one log entry and returns its result and the events it
// caused. The events slice is reused by the next Apply.
func (s *State) Apply(e Entry) (Result, []Event) {
	s.events = s.events[:0]
	if e.Index > s.lastIndex {
		s.lastIndex = e.Index
	}
	if s.clock.advance(e.Term, e.Command.Mono) {
		s.forgetOnNewTerm()
	}
	cmd := &e.Command
	if s.cfg.checkStamps(cmd) == nil {
		s.suspects = cmd.Suspects
	}
	s.expireDue(e.Index)
	var res Result
	if err := s.cfg.Check(cmd); err != nil {
		res = Result{Code: Invalid}
	} else {
		res = s.apply(e.Index, cmd)
	}
	s.suspects = nil
	s.dedupe.evict(s.clock.now-int64(s.cfg.DedupeWindow), s.cfg.DedupeMax)
	s.settled.evict(s.clock.now-int64(s.cfg.DedupeWindow), s.cfg.DedupeMax)
	res.LogTime = s.clock.now
	s.assertInvariants(cmd.Resource)
	for _, name := range cmd.Resources {
		s.assertInvariants(name)
	}
	for i := range s.events {
		s.events[i].Slot = e.Slot
	}
	return res, s.events
}

func (s *State) apply(index uint64, cmd *Command) Result {
	switch cmd.Op {
	case OpAcquire:
		return s.acquireDeduped(index, cmd)
	case OpRelease:
		return s.release(index, cmd)
	case OpRenew:
		return s.renew(index, cmd)
	case OpCancel:
		return s.cancel(index, cmd)
	case OpStatus:
		st := s.Status(cmd.Resource)
		return Result{Status: &st}
	case OpTick:
		return Result{}
	case OpHello:
		return s.hello(index, cmd)
	case OpOrphan:
		return s.orphan(index, cmd)
	case OpAcquireMany:
		return s.acquireManyDeduped(index, cmd)
	}
	panic(fmt.Sprintf("lock: op %v passed Check but has no handler", cmd.Op))
}

func (s *State) acquireDeduped(index uint64, cmd *Command) Result {
	if cmd.RequestID == "" {
		return s.acquire(index, cmd)
	}
	key := dedupeKeyOf(cmd.ClientID, cmd.RequestID)
	if d, ok := s.dedupe.get(key); ok {
		if !d.sameRequest(cmd) {
			return Result{Code: RequestIDReused}
		}
		return s.replay(index, d, cmd)
	}
	res := s.acquire(index, cmd)
	// A plain refusal changed nothing, so a retry may as well be judged
	// afresh (throughput-mode racers retry with the same request id).
	if res.Code == OK && (res.Granted || res.Queued) {
		lease := res.Lease
		if !res.Granted {
			lease = Lease{ID: cmd.LeaseID, ClientID: cmd.ClientID, Mode: cmd.Mode, TTLMs: cmd.TTLMs}
		}
		s.dedupe.put(key, s.clock.now, dedupeEntry{resource: cmd.Resource, lease: lease, granted: res.Granted, policy: cmd.Policy,
			permits: cmd.Permits})
	}
	return res
}

// replay answers a retried acquire from what became of the request its id
// first named: still held (the client now has it: claimed), still queued
// (the retry joins the wait), or over. It never grants a second lease, and
// a grant that has since ended is reported as ended (LeaseEnded), not as a
// live-looking grant.
func (s *State) replay(index uint64, d dedupeEntry, cmd *Command) Result {
	if r := s.resources.find(d.resource); r != nil {
		if i := r.findHolder(d.lease.ID); i >= 0 {
			h := r.holderAt(i)
			delete(s.unclaimed, h.id)
			return Result{Granted: true, Lease: s.leaseOf(h)}
		}
		if i := r.findWaiter(d.lease.ID); i >= 0 {
			if cycle := s.revivedCycle(r, &r.queue()[i], cmd); cycle != nil {
				return Result{Code: Deadlock, Cycle: cycle}
			}
			s.join(index, r, i, cmd)
			return Result{Queued: true, Position: i + 1, Lease: Lease{ID: d.lease.ID, ClientID: d.lease.ClientID, Mode: d.lease.Mode}}
		}
	}
	if d.granted {
		return Result{Code: LeaseEnded, Lease: d.lease}
	}
	return s.settledResult(d.lease.ID)
}

// join adds a retry that waits (same request id) to the queued request it
// repeats: the request stays queued until the last of its attempts gives
// up, so a retry with a shorter wait never cuts the original's short.
func (s *State) join(index uint64, r *resource, i int, cmd *Command) {
	w := &r.more.queue[i]
	if cmd.WaitMs == 0 || w.hasAttempt(cmd.LeaseID) {
		return // a try-lock retry does not wait; a duplicate proposal joined already
	}
	a := attempt{id: cmd.LeaseID, host: cmd.Host, incarnation: cmd.Incarnation,
		deadline: s.clock.now + cmd.WaitMs*int64(time.Millisecond)}
	if w.many != nil {
		// Every part of a multi request keeps the same attempts.
		// A part's deadline may be its resource's due time (resource.due).
		s.eachPart(w.many, func(part *resource, j int) {
			s.reheap(part, func() { s.joinPart(index, part, j, a) })
		})
		return
	}
	s.joinPart(index, r, i, a)
}

// joinPart adds attempt a to waiter i of r.
func (s *State) joinPart(index uint64, r *resource, i int, a attempt) {
	w := &r.more.queue[i]
	w.attempts = append(w.attempts, a)
	s.queuedByHost[a.host]++
	if a.deadline > w.deadline {
		w.deadline = a.deadline
		ev := Event{Kind: EventJoin, Lease: Lease{ID: w.id, ClientID: s.clients.name(w.client), Mode: w.mode, ExpiresAt: a.deadline}}
		s.emitEvent(index, r.name, w.many.tag(ev))
	}
}

// dropAttempts removes the attempts of waiter i for which gone says so and
// keeps the waiter's deadline the latest of those left. It reports whether
// any is left; a waiter with none must leave the queue.
func (s *State) dropAttempts(r *resource, i int, gone func(attempt) bool) bool {
	w := &r.more.queue[i]
	if w.many != nil {
		// Every part holds the same attempts, so each keeps the same ones.
		left := false
		// A part's deadline may be its resource's due time (resource.due).
		s.eachPart(w.many, func(part *resource, j int) {
			s.reheap(part, func() { left = s.dropPartAttempts(&part.more.queue[j], gone) })
		})
		return left
	}
	return s.dropPartAttempts(w, gone)
}

// dropPartAttempts is dropAttempts on one queue entry.
func (s *State) dropPartAttempts(w *waiter, gone func(attempt) bool) bool {
	kept := w.attempts[:0]
	w.deadline = 0
	for _, a := range w.attempts {
		if gone(a) {
			s.unrefHost(a.host)
			continue
		}
		kept = append(kept, a)
		w.deadline = max(w.deadline, a.deadline)
	}
	clear(w.attempts[len(kept):])
	w.attempts = kept
	return len(kept) > 0
}

func (s *State) unrefHost(host string) {
	if s.queuedByHost[host]--; s.queuedByHost[host] == 0 {
		delete(s.queuedByHost, host)
	}
}

func (s *State) acquire(index uint64, cmd *Command) Result {
	r := s.resources.find(cmd.Resource)
	if r != nil {
		// The same proposal applied twice (a duplicated forward) must not
		// create a second holder or waiter with one lease id.
		if i := r.findHolder(cmd.LeaseID); i >= 0 {
			return Result{Granted: true, Lease: s.leaseOf(r.holderAt(i))}
		}
		if i := r.findWaiter(cmd.LeaseID); i >= 0 {
			return Result{Queued: true, Position: i + 1, Lease: Lease{ID: cmd.LeaseID, ClientID: cmd.ClientID, Mode: cmd.Mode}}
		}
		// Waiters whose deadline passed must not block this request.
		// Granting the waiters behind them moves r's earliest expiry, so the
		// heap must hear of it even if this request is refused. A resource
		// only a multi request's queue entry kept may be freed by that, so
		// it is looked up again.
		s.settle(index, r)
		r = s.resources.find(cmd.Resource)
	}
	if r != nil && permitsMismatch(r, cmd) {
		return Result{Code: PermitsMismatch, Status: &Status{Resource: r.name, Permits: r.permits}}
	}
	if limit := s.acquireExceeds(r, cmd); limit != "" {
		return Result{Code: QuotaExceeded, Blocked: limit}
	}
	if r == nil {
		if s.resources.len() >= s.cfg.MaxResources {
			return Result{Code: TooManyLocks}
		}
		r = s.resources.insert(cmd.Resource)
		setPermits(r, cmd)
	}
	if s.compatible(r, cmd.Mode) && len(r.queue()) == 0 {
		slot := s.clients.ref(cmd.ClientID)
		lease := s.grant(index, r, cmd.LeaseID, slot, cmd.Mode, cmd.TTLMs, cmd.GraceMs, nil)
		s.reindex(index, r)
		return Result{Granted: true, Lease: lease}
	}
	if cmd.WaitMs == 0 || cmd.Policy == Throughput {
		return Result{}
	}
	if len(r.queue()) >= s.cfg.MaxWaitersPerQueue {
		return Result{Code: QueueFull}
	}
	if cycle := s.deadlockCycle(cmd.ClientID, cmd.Mode, []string{cmd.Resource}); cycle != nil {
		return Result{Code: Deadlock, Cycle: cycle}
	}
	deadline := s.clock.now + cmd.WaitMs*int64(time.Millisecond)
	w := waiter{
		id:       cmd.LeaseID,
		deadline: deadline,
		ttlMs:    uint32(cmd.TTLMs),
		client:   s.clients.ref(cmd.ClientID),
		mode:     cmd.Mode,
		graceMs:  uint32(cmd.GraceMs),
		attempts: []attempt{{id: cmd.LeaseID, host: cmd.Host, incarnation: cmd.Incarnation, deadline: deadline}},
	}
	s.pushWaiter(r, w)
	s.emit(index, EventEnqueue, r.name, Lease{ID: w.id, ClientID: cmd.ClientID, Mode: w.mode, ExpiresAt: w.deadline}, false)
	return Result{Queued: true, Position: len(r.more.queue), Lease: Lease{ID: w.id, ClientID: cmd.ClientID, Mode: w.mode}}
}

// grant makes a new holder, taking over the caller's reference on slot.
// from is the queued request being granted, nil for a direct grant.
func (s *State) grant(index uint64, r *resource, id LeaseID, slot uint32, mode Mode, ttlMs, graceMs int64, from *waiter) Lease {
	s.lastToken++
	h := holder{
		id:         id,
		token:      s.lastToken,
		expiresAt:  s.clock.now + ttlMs*int64(time.Millisecond),
		ttlMs:      uint32(ttlMs),
		clientMode: makeClientMode(slot, mode),
	}
	if from != nil {
		s.unclaimed[id] = claim{attempts: from.attempts, index: index, term: s.clock.term}
	}
	r.addHolder(h)
	s.setGrace(id, graceMs)
	s.leases++
	s.usage.add(r.name, s.clients.name(slot), 1, 0)
	lease := s.leaseOf(&h)
	ev := Event{Kind: EventGrant, Lease: lease, Permits: r.permits}
	if from != nil {
		ev.Queued, ev.Hosts = true, attemptHosts(from.attempts)
	}
	s.emitEvent(index, r.name, ev)
	return lease
}

// holding finds cmd's lease among the holders of cmd's resource; r is nil
// when it holds nothing there (a NotHolder answer).
func (s *State) holding(cmd *Command) (r *resource, i int) {
	if r = s.resources.find(cmd.Resource); r == nil {
		return nil, -1
	}
	if i = r.findHolder(cmd.LeaseID); i < 0 {
		return nil, -1
	}
	return r, i
}

func (s *State) release(index uint64, cmd *Command) Result {
	r, i := s.holding(cmd)
	if r == nil {
		return Result{Code: NotHolder}
	}
	lease := s.dropHolder(r, i)
	name := r.name
	s.emit(index, EventRelease, name, lease, false)
	s.settle(index, r)
	s.permitFreed(index, name)
	return Result{Lease: lease}
}

func (s *State) renew(index uint64, cmd *Command) Result {
	r, i := s.holding(cmd)
	if r == nil {
		if res, ok := s.reviveRegranted(index, cmd); ok {
			return res
		}
		return Result{Code: NotHolder}
	}
	h := r.holderAt(i)
	delete(s.unclaimed, h.id)
	if cmd.TTLMs != 0 {
		h.ttlMs = uint32(cmd.TTLMs)
	}
	kind := EventRenew
	if s.renewGrace(h, h.ttlMs) {
		kind = EventRevive
	}
	h.expiresAt = s.clock.now + int64(h.ttlMs)*int64(time.Millisecond)
	lease := s.leaseOf(h)
	s.emit(index, kind, r.name, lease, false)
	s.reindex(index, r)
	return Result{Lease: lease}
}

func (s *State) cancel(index uint64, cmd *Command) Result {
	if cmd.Deadlock {
		return s.breakCycle(index, cmd)
	}
	if len(cmd.Resources) > 0 {
		return s.cancelMany(index, cmd)
	}
	r := s.resources.find(cmd.Resource)
	if r == nil {
		return s.settledResult(cmd.LeaseID)
	}
	if i := r.findWaiter(cmd.LeaseID); i >= 0 {
		if !cmd.Owner.IsZero() && s.dropAttempts(r, i, func(a attempt) bool { return a.id == cmd.Owner }) {
			// Another attempt of the same request still waits.
			return Result{Queued: true, Position: i + 1, Lease: Lease{ID: cmd.LeaseID}}
		}
		s.dropWaiter(index, r, i)
		s.settle(index, r)
		return Result{Position: i + 1}
	}
	if i := r.findHolder(cmd.LeaseID); i >= 0 {
		if cmd.CallerGone {
			// Nobody here can be told: this attempt gives the grant up, and
			// it is released once no attempt of the request is left.
			if res := s.orphan(index, &Command{Resource: cmd.Resource, LeaseID: cmd.LeaseID, Owner: cmd.Owner}); res.Code == OK {
				return Result{}
			}
			return Result{Granted: true, Lease: s.leaseOf(r.holderAt(i))}
		}
		delete(s.unclaimed, cmd.LeaseID) // its caller is told now
		return Result{Granted: true, Lease: s.leaseOf(r.holderAt(i))}
	}
	return s.settledResult(cmd.LeaseID)
}

// claim is a grant nobody has claimed yet: the attempts that waited for
// it when it was made, any of which may yet tell its caller, and the log
// entry (index, term) that made it (zero when restored from a snapshot
// older than version 5).
type claim struct {
	attempts    []attempt
	index, term uint64
}

// UnclaimedOf calls fn, in resource order, for each grant to a queued
// request that no client has claimed yet and that host holds an attempt of
// from an incarnation other than incarnation, with the entry that made it
// (0, 0 when not known). A restarted node that caught up from a snapshot
// applied none of the entries it covers, so this is how it finds the grants
// made to its earlier process that it must judge (see OpOrphan).
func (s *State) UnclaimedOf(host string, incarnation uint64, fn func(resource string, id LeaseID, index, term uint64)) {
	earlier := func(a attempt) bool { return a.host == host && a.incarnation != incarnation }
	type found struct {
		resource    string
		id          LeaseID
		index, term uint64
	}
	var out []found
	for r := range s.resources.all() {
		for i := range r.holderCount() {
			h := r.holderAt(i)
			if c, ok := s.unclaimed[h.id]; ok && slices.ContainsFunc(c.attempts, earlier) {
				out = append(out, found{r.name, h.id, c.index, c.term})
			}
		}
	}
	// Resource order is history-dependent; holder order within one is not.
	slices.SortStableFunc(out, func(a, b found) int { return strings.Compare(a.resource, b.resource) })
	for _, f := range out {
		fn(f.resource, f.id, f.index, f.term)
	}
}

// attemptHosts lists the node processes holding attempts, each once.
func attemptHosts(as []attempt) []string {
	var hosts []string
	for _, a := range as {
		if !slices.Contains(hosts, a.host) {
			hosts = append(hosts, a.host)
		}
	}
	return hosts
}

// settledResult answers for a queued request that is no longer queued or
// holding: granted once but over (LeaseEnded), or never granted.
func (s *State) settledResult(id LeaseID) Result {
	if s.forgetsSettled() {
		return Result{}
	}
	if e, ok := s.settled.get(string(id[:])); ok && e.granted {
		return Result{Code: LeaseEnded, Lease: e.lease, Leases: e.leases}
	}
	return Result{}
}

// hello cancels the queued requests held by earlier processes of a node:
// they died with their callers, and a grant would hold the lock for a TTL
// with nobody to tell.
func (s *State) hello(index uint64, cmd *Command) Result {
	if s.queuedByHost[cmd.Host] == 0 {
		return Result{}
	}
	earlier := func(a attempt) bool { return a.host == cmd.Host && a.incarnation != cmd.Incarnation }
	var touched []string
	for r := range s.resources.all() {
		for _, w := range r.queue() {
			if slices.ContainsFunc(w.attempts, earlier) {
				touched = append(touched, r.name)
				break
			}
		}
	}
	// Events must come in the same order on every replica; slot order is
	// history-dependent (a restored replica numbers slots by name).
	slices.Sort(touched)
	for _, name := range touched {
		// Settling an earlier name may have freed this one (a multi
		// request's queue entry kept it), or emptied its queue already.
		r := s.resources.find(name)
		if r == nil {
			continue
		}
		for i := len(r.queue()) - 1; i >= 0; i-- {
			if !s.dropAttempts(r, i, earlier) {
				s.dropWaiter(index, r, i)
			}
		}
		s.settle(index, r)
	}
	return Result{}
}

// orphan says attempts of a queued request cannot deliver its grant: the
// attempt Owner (its caller left), or with Host every attempt held by an
// earlier process of that node than Incarnation (it died before storing
// the grant). Once no attempt is left the grant is released, unless the
// client claimed it meanwhile (renewed it, or a retry was answered with
// it): a claimed lease is the client's to release. NotHolder answers
// every orphan that released nothing.
func (s *State) orphan(index uint64, cmd *Command) Result {
	r, i := s.holding(cmd)
	c, unclaimed := s.unclaimed[cmd.LeaseID]
	if r == nil || !unclaimed {
		return Result{Code: NotHolder}
	}
	gone := func(a attempt) bool {
		return (cmd.Host == "" && cmd.Owner.IsZero()) || (!cmd.Owner.IsZero() && a.id == cmd.Owner) ||
			(cmd.Host != "" && a.host == cmd.Host && a.incarnation != cmd.Incarnation)
	}
	c.attempts = slices.DeleteFunc(slices.Clone(c.attempts), gone)
	if len(c.attempts) > 0 {
		s.unclaimed[cmd.LeaseID] = c
		return Result{Code: NotHolder}
	}
	lease := s.dropHolder(r, i)
	name := r.name
	s.emit(index, EventRelease, name, lease, false)
	s.settle(index, r)
	s.permitFreed(index, name)
	return Result{Lease: lease}
}

// dropHolder removes holder i and returns what it was.
func (s *State) dropHolder(r *resource, i int) Lease {
	h := r.holderAt(i)
	lease := s.leaseOf(h)
	delete(s.unclaimed, h.id)
	delete(s.grace, h.id)
	s.usage.add(r.name, s.clients.name(h.client()), -1, 0)
	s.clients.unref(h.client())
	r.removeHolder(i)
	s.leases--
	return lease
}

// pushWaiter appends w to r's queue.
func (s *State) pushWaiter(r *resource, w waiter) {
	r.extra().queue = append(r.extra().queue, w)
	s.waiters++
	s.usage.add(r.name, s.clients.name(w.client), 0, 1)
	s.waitingOn.add(w.client, r.name, 1)
	for _, a := range w.attempts {
		s.queuedByHost[a.host]++
	}
}

// takeWaiter removes waiter i from r's queue and returns it; the caller
// owns its client reference.
func (s *State) takeWaiter(r *resource, i int) waiter {
	w := r.queue()[i]
	r.removeWaiter(i)
	s.waiters--
	s.usage.add(r.name, s.clients.name(w.client), 0, -1)
	s.waitingOn.add(w.client, r.name, -1)
	for _, a := range w.attempts {
		s.unrefHost(a.host)
	}
	return w
}

// dropWaiter removes waiter i without granting it: its caller gave up, its
// wait elapsed, or its node is gone. The outcome is remembered (settled),
// so a late cancel or retry learns it was never granted.
func (s *State) dropWaiter(index uint64, r *resource, i int) {
	if m := r.queue()[i].many; m != nil {
		s.dropMany(index, m)
		return
	}
	w := s.takeWaiter(r, i)
	lease := Lease{ID: w.id, ClientID: s.clients.name(w.client), Mode: w.mode}
	s.clients.unref(w.client)
	s.emitEvent(index, r.name, Event{Kind: EventCancel, Lease: lease})
	s.settled.put(string(w.id[:]), s.clock.now, dedupeEntry{resource: r.name, lease: lease})
}

// promote grants the queue head(s) that fit: one exclusive waiter, or every
// shared waiter up to the next exclusive one. Waiters that nobody waits for
// any more are dropped on the way: their deadline passed, or their node is
// on the leader's suspect list, so a grant could not be delivered.
func (s *State) promote(index uint64, r *resource) {
	for len(r.queue()) > 0 {
		suspected := func(a attempt) bool { return slices.Contains(s.suspects, a.host) }
		left := len(s.suspects) == 0 || s.dropAttempts(r, 0, suspected)
		w := &r.queue()[0]
		if !left || w.deadline <= s.clock.now {
			s.dropWaiter(index, r, 0)
			continue
		}
		if !s.compatible(r, w.mode) {
			return
		}
		if w.many != nil {
			// A multi request at the head blocks the queue until it heads
			// all of its queues; granting it takes this entry too.
			if !s.grantMany(index, w.many) {
				return
			}
			continue
		}
		taken := s.takeWaiter(r, 0)
		lease := s.grant(index, r, taken.id, taken.client, taken.mode, int64(taken.ttlMs), int64(taken.graceMs), &taken)
		s.settled.put(string(taken.id[:]), s.clock.now, dedupeEntry{resource: r.name, lease: lease, granted: true})
	}
}

// reindex puts r where its holders say: in the expiry heap while it has any,
// deleted once it has none (a free lock never keeps a queue: promote ran),
// unless a multi request heads its queue, waiting for its other resources.
// A resource kept by its queue alone stays in the heap at the deadline of
// the multi request heading it: once that passes, the requests behind it
// may be granted, and no holder's expiry would come to tell them.
func (s *State) reindex(index uint64, r *resource) {
	if q := r.queue(); r.holderCount() == 0 && (len(q) == 0 || q[0].many == nil) {
		if len(q) != 0 {
			panic("lock: queue left behind a free lock")
		}
		if s.expiry.indexOf(r) >= 0 {
			s.expiry.remove(r)
		}
		s.emit(index, EventFreed, r.name, Lease{}, false)
		s.resources.remove(r) // zeroes the record, so it comes after emit
		return
	}
	if i := s.expiry.indexOf(r); i < 0 {
		s.expiry.push(r)
	} else {
		s.expiry.fix(i)
	}
}

// expireDue frees every lease whose expiry is at or before log time; a
// lease with a grace window enters it instead (grace.go), and is freed
// when that ends.
func (s *State) expireDue(index uint64) {
	for s.expiry.len() > 0 {
		r := s.expiry.min()
		if at, _ := r.due(); at > s.clock.now {
			return
		}
		name, dropped := r.name, false
		for i := r.holderCount() - 1; i >= 0; i-- {
			if h := r.holderAt(i); h.expiresAt <= s.clock.now {
				if s.enterGrace(index, r, h) {
					continue
				}
				s.rememberRegranted(h)
				lease := s.dropHolder(r, i)
				s.expired++
				s.emit(index, EventExpire, r.name, lease, false)
				dropped = true
			}
		}
		s.settle(index, r)
		if dropped {
			s.permitFreed(index, name)
		}
	}
}

func (s *State) emit(index uint64, kind EventKind, resource string, lease Lease, queued bool) {
	s.emitEvent(index, resource, Event{Kind: kind, Lease: lease, Queued: queued})
}

// emitEvent stamps ev with the entry's index, log time and resource.
func (s *State) emitEvent(index uint64, resource string, ev Event) {
	ev.Index, ev.LogTime, ev.Resource = index, s.clock.now, resource
	s.events = append(s.events, ev)
}

func (s *State) leaseOf(h *holder) Lease {
	l := Lease{
		ID:        h.id,
		ClientID:  s.clients.name(h.client()),
		Mode:      h.mode(),
		Token:     h.token,
		ExpiresAt: h.expiresAt,
		TTLMs:     int64(h.ttlMs),
	}
	if len(s.grace) > 0 {
		s.graceOf(h, &l)
	}
	return l
}

// Status returns the holders and live waiters of resource as of the last
// applied entry. It does not go through the log; callers wanting a
// linearizable read propose OpStatus.
func (s *State) Status(resource string) Status {
	st := Status{Resource: resource}
	r := s.resources.find(resource)
	if r == nil {
		return st
	}
	st.Permits = r.permits
	for i := 0; i < r.holderCount(); i++ {
		st.Holders = append(st.Holders, s.leaseOf(r.holderAt(i)))
	}
	for _, w := range r.queue() {
		if w.deadline > s.clock.now {
			st.Queue = append(st.Queue, Waiter{ID: w.id, ClientID: s.clients.name(w.client), Mode: w.mode, Deadline: w.deadline})
		}
	}
	return st
}

// assertInvariants checks, after every apply, the two properties the whole
// system exists for on the resource the command touched: at most one
// exclusive holder (never mixed with shared ones; a semaphore of N: at most
// N, all exclusive) and holders' tokens not above the last token issued.
// A violation is a programming error.
func (s *State) assertInvariants(name string) {
	r := s.resources.find(name)
	if r == nil {
		return
	}
	n := r.holderCount()
	if n == 0 && (len(r.queue()) == 0 || r.queue()[0].many == nil) {
		panic("lock: resource kept without holders")
	}
	for i := 0; i < n; i++ {
		h := r.holderAt(i)
		if r.semaphore() && (h.mode() != Exclusive || !s.heldWithin(r, n)) {
			panic("lock: semaphore holds more than its permits, or a shared holder")
		}
		if !r.semaphore() && h.mode() == Exclusive && n > 1 {
			panic("lock: exclusive holder shares the lock")
		}
		if !s.tokenInRange(h.token) {
			panic("lock: holder token out of range")
		}
	}
}

// tokenInRange says whether a holder's token can have been issued: not
// zero and not above the last token. The token-in-memory bug mode breaks
// the bound on purpose; the testbed must catch it from the outside, not by
// a replica crashing or refusing its own snapshots.
func (s *State) tokenInRange(t uint64) bool {
	return t != 0 && (t <= s.lastToken || s.tokenInMemory())
}

// Metrics is a summary for monitoring.
type Metrics struct {
	Resources, Leases, Waiters, Clients, DedupeEntries int
	Expirations, LastToken, LastIndex                  uint64
	LogTime                                            int64
}

// Metrics reports counts for monitoring.
func (s *State) Metrics() Metrics {
	return Metrics{
		Resources: s.resources.len(), Leases: s.leases, Waiters: s.waiters,
		Clients: s.clients.len(), DedupeEntries: s.dedupe.len(),
		Expirations: s.expired, LastToken: s.lastToken, LastIndex: s.lastIndex,
		LogTime: s.clock.now,
	}
}

// NextExpiry returns the log time of the earliest lease expiry.
func (s *State) NextExpiry() (int64, bool) {
	if s.expiry.len() == 0 {
		return 0, false
	}
	at, _ := s.expiry.min().due()
	return at, true
}

// ClockReading returns log time with the (term, leader mono) pair that last
// advanced it, so a leader can translate its own clock into log time.
func (s *State) ClockReading() (logTime int64, term uint64, mono int64) {
	return s.clock.now, s.clock.term, s.clock.mono
}
