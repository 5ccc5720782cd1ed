package lock

import (
	"slices"
	"time"
)

// Multi requests (OpAcquireMany) take every resource they name at once or
// none, so a client never holds part of what it needs.
//
// Granted now: every resource must be free for the mode with nobody queued
// (the single acquire's rule, per resource); then each gets its own lease
// (ManyLeaseID) and fencing token, all in this entry, in request order.
//
// Queued: the request enters every queue in this entry, one queue entry
// (waiter) per resource, all pointing at one manyRequest. It is granted,
// again in one entry, only when it heads every one of its queues and each
// resource is free for its mode; while it heads some queues but not others
// it blocks them, which is the point: no partial holding. A resource may
// then be kept with no holder, only a queue headed by a multi request.
// Log order gives every queue the same relative order of requests, so the
// oldest queued request heads all of its queues and no two multi requests
// can wait for each other.
//
// Leaving the queue (deadline, cancel, hello, suspects) takes every part
// at once: the parts keep equal attempts and deadlines, so a rule that
// drops one drops all.

// manyRequest is a queued multi request. Its queue entries share it; it
// is never edited.
type manyRequest struct {
	// base is the request's lease id; part j has ManyLeaseID(base, j).
	base      LeaseID
	resources []string
}

// tag marks ev as an event of multi request m; a nil m leaves it as is.
func (m *manyRequest) tag(ev Event) Event {
	if m != nil {
		ev.Many, ev.ManySize = m.base, len(m.resources)
	}
	return ev
}

// part returns part j of m: its resource and its place in that queue.
// Every part exists while m is queued; anything else is a programming error.
func (s *State) part(m *manyRequest, j int) (*resource, int) {
	r := s.resources.find(m.resources[j])
	if r == nil {
		panic("lock: multi request's resource is gone")
	}
	i := r.findWaiter(ManyLeaseID(m.base, j))
	if i < 0 || r.queue()[i].many != m {
		panic("lock: multi request lost a queue entry")
	}
	return r, i
}

// eachPart calls fn with every part of m in request order. fn must not
// remove queue entries.
func (s *State) eachPart(m *manyRequest, fn func(r *resource, i int)) {
	for j := range m.resources {
		fn(s.part(m, j))
	}
}

// position is where m stands furthest back among its queues (1-based).
func (s *State) position(m *manyRequest) int {
	pos := 0
	s.eachPart(m, func(_ *resource, i int) { pos = max(pos, i+1) })
	return pos
}

// settle promotes r, then every resource whose queue a multi request's
// grant or drop changed meanwhile (s.dirty, which such steps extend), then
// reindexes each once, in that order. Every extension follows a request
// leaving its queues, so the passes are bounded by the waiters.
//
// The heap must hold valid due times whenever it sifts, yet one settle may
// change several resources' due times; so each leaves the heap before it
// changes (r here, the others in grantMany and dropMany) and reindex puts
// it back.
func (s *State) settle(index uint64, r *resource) {
	s.unheap(r)
	s.dirty = append(s.dirty, r)
	for i := 0; i < len(s.dirty); i++ {
		s.promote(index, s.dirty[i])
	}
	for i, d := range s.dirty {
		// reindex may free a record, so each is reindexed once only.
		if !slices.Contains(s.dirty[:i], d) {
			s.reindex(index, d)
		}
	}
	clear(s.dirty)
	s.dirty = s.dirty[:0]
}

// unheap takes r out of the expiry heap, if it is there, and reports
// whether it was.
func (s *State) unheap(r *resource) bool {
	if s.expiry.indexOf(r) < 0 {
		return false
	}
	s.expiry.remove(r)
	return true
}

// reheap changes r with change, which may move its due time, keeping the
// heap valid throughout.
func (s *State) reheap(r *resource, change func()) {
	was := s.unheap(r)
	change()
	if was {
		s.expiry.push(r)
	}
}

// dropMany removes every part of m without granting it, and remembers
// under m's lease id that it was never granted. The caller settles.
func (s *State) dropMany(index uint64, m *manyRequest) {
	var ended Lease
	for j := range m.resources {
		r, i := s.part(m, j)
		s.unheap(r)
		w := s.takeWaiter(r, i)
		client := s.clients.name(w.client)
		ended = Lease{ID: m.base, ClientID: client, Mode: w.mode, TTLMs: int64(w.ttlMs)}
		s.clients.unref(w.client)
		s.emitEvent(index, r.name, m.tag(Event{Kind: EventCancel, Lease: Lease{ID: w.id, ClientID: client, Mode: w.mode}}))
		s.dirty = append(s.dirty, r)
	}
	s.settled.put(string(m.base[:]), s.clock.now, dedupeEntry{resources: m.resources, lease: ended})
}

// grantMany grants every part of m if m heads each of its queues and every
// resource is free for its mode, and reports whether it did; otherwise it
// changes nothing. The caller settles.
func (s *State) grantMany(index uint64, m *manyRequest) bool {
	for j := range m.resources {
		r, i := s.part(m, j)
		if i != 0 || !s.compatible(r, r.queue()[0].mode) {
			return false
		}
	}
	leases := make([]Lease, 0, len(m.resources))
	for j := range m.resources {
		r, _ := s.part(m, j)
		s.unheap(r)
		taken := s.takeWaiter(r, 0)
		leases = append(leases, s.grant(index, r, taken.id, taken.client, taken.mode, int64(taken.ttlMs), int64(taken.graceMs), &taken))
		s.tagLast(m)
		s.dirty = append(s.dirty, r)
	}
	s.settled.put(string(m.base[:]), s.clock.now, dedupeEntry{resources: m.resources, lease: leases[0], granted: true, leases: leases})
	return true
}

// tagLast marks the event just emitted (grant emits its event last) as m's.
func (s *State) tagLast(m *manyRequest) {
	last := &s.events[len(s.events)-1]
	*last = m.tag(*last)
}

// sameMany reports whether cmd, an OpAcquireMany, repeats the multi
// request e remembers: the same resources in the same order, mode, TTL and
// policy. The wait may differ, as for sameRequest.
func (e *dedupeEntry) sameMany(cmd *Command) bool {
	return len(e.resources) > 0 && slices.Equal(e.resources, cmd.Resources) && e.lease.Mode == cmd.Mode &&
		e.lease.TTLMs == cmd.TTLMs && e.policy == cmd.Policy
}

func (s *State) acquireManyDeduped(index uint64, cmd *Command) Result {
	if cmd.RequestID == "" {
		return s.acquireMany(index, cmd)
	}
	key := dedupeKeyOf(cmd.ClientID, cmd.RequestID)
	if d, ok := s.dedupe.get(key); ok {
		if !d.sameMany(cmd) {
			return Result{Code: RequestIDReused}
		}
		return s.replayMany(index, d, cmd)
	}
	res := s.acquireMany(index, cmd)
	if res.Code == OK && (res.Granted || res.Queued) {
		e := dedupeEntry{resources: slices.Clone(cmd.Resources), granted: res.Granted, policy: cmd.Policy, leases: res.Leases,
			lease: Lease{ID: cmd.LeaseID, ClientID: cmd.ClientID, Mode: cmd.Mode, TTLMs: cmd.TTLMs}}
		if res.Granted {
			e.lease = res.Leases[0]
		}
		s.dedupe.put(key, s.clock.now, e)
	}
	return res
}

// replayMany answers a retried multi request from what became of the
// first: still queued (the retry joins the wait), still holding every
// lease (now claimed), or over. It never grants a second time.
func (s *State) replayMany(index uint64, d dedupeEntry, cmd *Command) Result {
	res, found := s.manyOutcome(d.resources, d.lease.ID)
	switch {
	case found && res.Queued:
		r := s.resources.find(d.resources[0])
		i := r.findWaiter(d.lease.ID)
		// Every part keeps the same deadline, so all revive together.
		if cycle := s.revivedCycle(r, &r.queue()[i], cmd); cycle != nil {
			return Result{Code: Deadlock, Cycle: cycle}
		}
		s.join(index, r, i, cmd)
		return res
	case found:
		for _, l := range res.Leases {
			delete(s.unclaimed, l.ID)
		}
		return res
	case d.granted:
		return Result{Code: LeaseEnded, Lease: d.lease, Leases: d.leases}
	}
	return s.settledResult(d.lease.ID)
}

// manyOutcome finds multi request base on resources: queued (Queued, its
// lease id and furthest position) or holding every lease (Granted, the
// leases); found is false otherwise.
func (s *State) manyOutcome(resources []string, base LeaseID) (res Result, found bool) {
	if r := s.resources.find(resources[0]); r != nil {
		if i := r.findWaiter(base); i >= 0 && r.queue()[i].many != nil {
			w := &r.queue()[i]
			lease := Lease{ID: base, ClientID: s.clients.name(w.client), Mode: w.mode}
			return Result{Queued: true, Position: s.position(w.many), Lease: lease}, true
		}
	}
	leases := make([]Lease, 0, len(resources))
	for j, name := range resources {
		r := s.resources.find(name)
		if r == nil {
			return Result{}, false
		}
		i := r.findHolder(ManyLeaseID(base, j))
		if i < 0 {
			return Result{}, false
		}
		leases = append(leases, s.leaseOf(r.holderAt(i)))
	}
	return Result{Granted: true, Lease: leases[0], Leases: leases}, true
}

func (s *State) acquireMany(index uint64, cmd *Command) Result {
	// The same proposal applied twice (a duplicated forward) must not
	// create a second request with the same lease ids.
	if r := s.resources.find(cmd.Resources[0]); r != nil && (r.findHolder(cmd.LeaseID) >= 0 || r.findWaiter(cmd.LeaseID) >= 0) {
		if res, found := s.manyOutcome(cmd.Resources, cmd.LeaseID); found {
			return res
		}
		return Result{Code: LeaseEnded, Lease: Lease{ID: cmd.LeaseID, ClientID: cmd.ClientID, Mode: cmd.Mode}}
	}
	// Waiters whose deadline passed must not block this request.
	for _, name := range cmd.Resources {
		if r := s.resources.find(name); r != nil {
			s.settle(index, r)
		}
	}
	for _, name := range cmd.Resources {
		// A multi request takes plain locks only (semaphore.go).
		if r := s.resources.find(name); r != nil && r.semaphore() {
			return Result{Code: PermitsMismatch, Blocked: name}
		}
	}
	blocked, missing, missingCount := "", "", 0
	for _, name := range cmd.Resources {
		r := s.resources.find(name)
		switch {
		case r == nil:
			missing = firstName(missing, name)
			missingCount++
		case !s.compatible(r, cmd.Mode) || len(r.queue()) != 0:
			blocked = firstName(blocked, name)
		}
	}
	// Granting or queueing both create the missing resources.
	tooMany := s.resources.len()+missingCount > s.cfg.MaxResources
	if blocked == "" {
		if tooMany {
			return Result{Code: TooManyLocks, Blocked: missing}
		}
		if limit := s.exceedsAll(cmd.Quota, cmd.Resources, cmd.ClientID, true); limit != "" {
			return Result{Code: QuotaExceeded, Blocked: limit}
		}
		return s.grantManyNow(index, cmd)
	}
	if cmd.WaitMs == 0 || cmd.Policy == Throughput {
		return Result{Blocked: blocked}
	}
	for _, name := range cmd.Resources {
		if r := s.resources.find(name); r != nil && len(r.queue()) >= s.cfg.MaxWaitersPerQueue {
			return Result{Code: QueueFull, Blocked: name}
		}
	}
	if tooMany {
		return Result{Code: TooManyLocks, Blocked: missing}
	}
	if limit := s.exceedsAll(cmd.Quota, cmd.Resources, cmd.ClientID, false); limit != "" {
		return Result{Code: QuotaExceeded, Blocked: limit}
	}
	if cycle := s.deadlockCycle(cmd.ClientID, cmd.Mode, cmd.Resources); cycle != nil {
		return Result{Code: Deadlock, Cycle: cycle, Blocked: blocked}
	}
	return s.enqueueMany(index, cmd)
}

// firstName keeps the first non-empty name.
func firstName(first, name string) string {
	if first != "" {
		return first
	}
	return name
}

// grantManyNow grants every resource of cmd in this entry, in request order.
func (s *State) grantManyNow(index uint64, cmd *Command) Result {
	m := &manyRequest{base: cmd.LeaseID, resources: cmd.Resources}
	leases := make([]Lease, 0, len(cmd.Resources))
	for j, name := range cmd.Resources {
		r := s.resources.find(name)
		if r == nil {
			r = s.resources.insert(name)
		}
		slot := s.clients.ref(cmd.ClientID)
		leases = append(leases, s.grant(index, r, ManyLeaseID(cmd.LeaseID, j), slot, cmd.Mode, cmd.TTLMs, cmd.GraceMs, nil))
		s.tagLast(m)
		s.reindex(index, r)
	}
	return Result{Granted: true, Lease: leases[0], Leases: leases}
}

// enqueueMany enters cmd into every queue in this entry.
func (s *State) enqueueMany(index uint64, cmd *Command) Result {
	m := &manyRequest{base: cmd.LeaseID, resources: slices.Clone(cmd.Resources)}
	deadline := s.clock.now + cmd.WaitMs*int64(time.Millisecond)
	first := attempt{id: cmd.LeaseID, host: cmd.Host, incarnation: cmd.Incarnation, deadline: deadline}
	pos := 0
	for j, name := range m.resources {
		r := s.resources.find(name)
		if r == nil {
			// Kept by its queue alone until the request is granted or leaves.
			r = s.resources.insert(name)
		}
		w := waiter{
			id:       ManyLeaseID(m.base, j),
			deadline: deadline,
			ttlMs:    uint32(cmd.TTLMs),
			client:   s.clients.ref(cmd.ClientID),
			mode:     cmd.Mode,
			graceMs:  uint32(cmd.GraceMs),
			attempts: []attempt{first},
			many:     m,
		}
		s.pushWaiter(r, w)
		pos = max(pos, len(r.queue()))
		lease := Lease{ID: w.id, ClientID: cmd.ClientID, Mode: w.mode, ExpiresAt: deadline}
		s.emitEvent(index, name, m.tag(Event{Kind: EventEnqueue, Lease: lease}))
		// A resource kept by this queue entry alone waits in the heap for
		// the request's deadline.
		s.reindex(index, r)
	}
	return Result{Queued: true, Position: pos, Lease: Lease{ID: m.base, ClientID: cmd.ClientID, Mode: cmd.Mode}}
}

// cancelMany is cancel for a multi request (Command.Resources set,
// LeaseID its lease id): the attempt Owner gives up, and once none is
// left the request leaves every queue; a request granted meanwhile is
// reported (claimed) or, for a caller that left, released as its orphan.
func (s *State) cancelMany(index uint64, cmd *Command) Result {
	if r := s.resources.find(cmd.Resources[0]); r != nil {
		if i := r.findWaiter(cmd.LeaseID); i >= 0 && r.queue()[i].many != nil {
			pos := s.position(r.queue()[i].many)
			if !cmd.Owner.IsZero() && s.dropAttempts(r, i, func(a attempt) bool { return a.id == cmd.Owner }) {
				// Another attempt of the same request still waits.
				return Result{Queued: true, Position: pos, Lease: Lease{ID: cmd.LeaseID}}
			}
			s.dropWaiter(index, r, i)
			s.settle(index, r)
			return Result{Position: pos}
		}
	}
	res, found := s.manyOutcome(cmd.Resources, cmd.LeaseID)
	if !found {
		return s.settledResult(cmd.LeaseID)
	}
	if cmd.CallerGone {
		for j, name := range cmd.Resources {
			s.orphan(index, &Command{Resource: name, LeaseID: ManyLeaseID(cmd.LeaseID, j), Owner: cmd.Owner})
		}
		if res, found = s.manyOutcome(cmd.Resources, cmd.LeaseID); !found {
			return Result{}
		}
		return res
	}
	for _, l := range res.Leases {
		delete(s.unclaimed, l.ID) // its caller is told now
	}
	return res
}
