// Package lock is lockstep's replicated lock state machine. It is pure: no
// goroutines, clocks or I/O, and no randomness that can change a result (the
// resource index seeds its hash per process, as Go maps do, which only moves
// memory around). Time comes from the log (the
// leader's monotonic clock reading carried in each command), so applying the
// same entries in the same order gives byte-identical state on every replica.
package lock

import (
	"fmt"
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
	s.expireDue(e.Index)
	var res Result
	if err := s.cfg.Check(cmd); err != nil {
		res = Result{Code: Invalid}
	} else {
		res = s.apply(e.Index, cmd)
	}
	s.dedupe.evict(s.clock.now-int64(s.cfg.DedupeWindow), s.cfg.DedupeMax)
	s.settled.evict(s.clock.now-int64(s.cfg.DedupeWindow), s.cfg.DedupeMax)
	res.LogTime = s.clock.now
	s.assertInvariants(cmd.Resource)
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
	}
	panic(fmt.Sprintf("lock: op %v passed Check but has no handler", cmd.Op))
}

func (s *State) acquireDeduped(index uint64, cmd *Command) Result {
	if cmd.RequestID == "" {
		return s.acquire(index, cmd)
	}
	key := dedupeKeyOf(cmd.ClientID, cmd.RequestID)
	if d, ok := s.dedupe.get(key); ok {
		return s.replay(d)
	}
	res := s.acquire(index, cmd)
	// A plain refusal changed nothing, so a retry may as well be judged
	// afresh (throughput-mode racers retry with the same request id).
	if res.Code == OK && (res.Granted || res.Queued) {
		lease := res.Lease
		if !res.Granted {
			lease = Lease{ID: cmd.LeaseID, ClientID: cmd.ClientID, Mode: cmd.Mode}
		}
		s.dedupe.put(key, s.clock.now, dedupeEntry{resource: cmd.Resource, lease: lease, granted: res.Granted})
	}
	return res
}

// replay answers a retried acquire from the current state of the lease the
// first attempt created: still held, still queued, or gone. A grant that has
// since ended is reported as it was (its expiry is in the past), so the
// client learns it no longer holds the lock without a second grant.
func (s *State) replay(d dedupeEntry) Result {
	if r := s.resources.find(d.resource); r != nil {
		if i := r.findHolder(d.lease.ID); i >= 0 {
			return Result{Granted: true, Lease: s.leaseOf(r.holderAt(i))}
		}
		if i := r.findWaiter(d.lease.ID); i >= 0 {
			return Result{Queued: true, Position: i + 1, Lease: Lease{ID: d.lease.ID}}
		}
	}
	if d.granted {
		return Result{Granted: true, Lease: d.lease}
	}
	return s.settledResult(d.lease.ID)
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
		// heap must hear of it even if this request is refused.
		s.promote(index, r)
		s.reindex(index, r)
	}
	if r == nil {
		if s.resources.len() >= s.cfg.MaxResources {
			return Result{Code: TooManyLocks}
		}
		r = s.resources.insert(cmd.Resource)
	}
	if r.compatible(cmd.Mode) && len(r.queue()) == 0 {
		slot := s.clients.ref(cmd.ClientID)
		lease := s.grant(index, r, cmd.LeaseID, slot, cmd.Mode, cmd.TTLMs, false)
		s.reindex(index, r)
		return Result{Granted: true, Lease: lease}
	}
	if cmd.WaitMs == 0 || cmd.Policy == Throughput {
		return Result{}
	}
	if len(r.queue()) >= s.cfg.MaxWaitersPerQueue {
		return Result{Code: QueueFull}
	}
	w := waiter{
		id:       cmd.LeaseID,
		deadline: s.clock.now + cmd.WaitMs*int64(time.Millisecond),
		ttlMs:    uint32(cmd.TTLMs),
		client:   s.clients.ref(cmd.ClientID),
		mode:     cmd.Mode,
	}
	r.extra().queue = append(r.extra().queue, w)
	s.waiters++
	s.emit(index, EventEnqueue, r.name, Lease{ID: w.id, ClientID: cmd.ClientID, Mode: w.mode}, false)
	return Result{Queued: true, Position: len(r.more.queue), Lease: Lease{ID: w.id, ClientID: cmd.ClientID, Mode: w.mode}}
}

// grant makes a new holder, taking over the caller's reference on slot.
func (s *State) grant(index uint64, r *resource, id LeaseID, slot uint32, mode Mode, ttlMs int64, queued bool) Lease {
	s.lastToken++
	h := holder{
		id:         id,
		token:      s.lastToken,
		expiresAt:  s.clock.now + ttlMs*int64(time.Millisecond),
		ttlMs:      uint32(ttlMs),
		clientMode: makeClientMode(slot, mode),
	}
	r.addHolder(h)
	s.leases++
	lease := s.leaseOf(&h)
	s.emit(index, EventGrant, r.name, lease, queued)
	return lease
}

func (s *State) release(index uint64, cmd *Command) Result {
	r := s.resources.find(cmd.Resource)
	if r == nil {
		return Result{Code: NotHolder}
	}
	i := r.findHolder(cmd.LeaseID)
	if i < 0 {
		return Result{Code: NotHolder}
	}
	lease := s.dropHolder(r, i)
	s.emit(index, EventRelease, r.name, lease, false)
	s.promote(index, r)
	s.reindex(index, r)
	return Result{Lease: lease}
}

func (s *State) renew(index uint64, cmd *Command) Result {
	r := s.resources.find(cmd.Resource)
	if r == nil {
		return Result{Code: NotHolder}
	}
	i := r.findHolder(cmd.LeaseID)
	if i < 0 {
		return Result{Code: NotHolder}
	}
	h := r.holderAt(i)
	if cmd.TTLMs != 0 {
		h.ttlMs = uint32(cmd.TTLMs)
	}
	h.expiresAt = s.clock.now + int64(h.ttlMs)*int64(time.Millisecond)
	lease := s.leaseOf(h)
	s.emit(index, EventRenew, r.name, lease, false)
	s.reindex(index, r)
	return Result{Lease: lease}
}

func (s *State) cancel(index uint64, cmd *Command) Result {
	r := s.resources.find(cmd.Resource)
	if r == nil {
		return s.settledResult(cmd.LeaseID)
	}
	if i := r.findWaiter(cmd.LeaseID); i >= 0 {
		w := r.queue()[i]
		lease := Lease{ID: w.id, ClientID: s.clients.name(w.client), Mode: w.mode}
		s.clients.unref(w.client)
		r.removeWaiter(i)
		s.waiters--
		s.emit(index, EventCancel, r.name, lease, false)
		s.promote(index, r)
		s.reindex(index, r)
		return Result{Position: i + 1}
	}
	if i := r.findHolder(cmd.LeaseID); i >= 0 {
		return Result{Granted: true, Lease: s.leaseOf(r.holderAt(i))}
	}
	return s.settledResult(cmd.LeaseID)
}

// settledResult answers for a queued request that is no longer queued or
// holding: its grant as it was made (now ended), or a refusal.
func (s *State) settledResult(id LeaseID) Result {
	if e, ok := s.settled.get(string(id[:])); ok && e.granted {
		return Result{Granted: true, Lease: e.lease}
	}
	return Result{}
}

// dropHolder removes holder i and returns what it was.
func (s *State) dropHolder(r *resource, i int) Lease {
	h := r.holderAt(i)
	lease := s.leaseOf(h)
	s.clients.unref(h.client())
	r.removeHolder(i)
	s.leases--
	return lease
}

// promote grants the queue head(s) that fit: one exclusive waiter, or every
// shared waiter up to the next exclusive one. Waiters whose deadline passed
// are dropped on the way: their callers have given up.
func (s *State) promote(index uint64, r *resource) {
	for len(r.queue()) > 0 {
		w := r.queue()[0]
		if w.deadline <= s.clock.now {
			lease := Lease{ID: w.id, ClientID: s.clients.name(w.client), Mode: w.mode}
			s.clients.unref(w.client)
			r.removeWaiter(0)
			s.waiters--
			s.emit(index, EventCancel, r.name, lease, false)
			s.settled.put(string(w.id[:]), s.clock.now, dedupeEntry{resource: r.name, lease: lease})
			continue
		}
		if !r.compatible(w.mode) {
			return
		}
		r.removeWaiter(0)
		s.waiters--
		lease := s.grant(index, r, w.id, w.client, w.mode, int64(w.ttlMs), true)
		s.settled.put(string(w.id[:]), s.clock.now, dedupeEntry{resource: r.name, lease: lease, granted: true})
	}
}

// reindex puts r where its holders say: in the expiry heap while it has any,
// deleted once it has none (a free lock never keeps a queue: promote ran).
func (s *State) reindex(index uint64, r *resource) {
	if r.holderCount() == 0 {
		if len(r.queue()) != 0 {
			panic("lock: queue left behind a free lock")
		}
		if r.heapIndex >= 0 {
			s.expiry.remove(r)
		}
		s.emit(index, EventFreed, r.name, Lease{}, false)
		s.resources.remove(r) // zeroes the record, so it comes after emit
		return
	}
	if r.heapIndex < 0 {
		s.expiry.push(r)
	} else {
		s.expiry.fix(int(r.heapIndex))
	}
}

// expireDue frees every lease whose expiry is at or before log time.
func (s *State) expireDue(index uint64) {
	for s.expiry.len() > 0 {
		r := s.expiry.min()
		if at, _ := r.due(); at > s.clock.now {
			return
		}
		for i := r.holderCount() - 1; i >= 0; i-- {
			if r.holderAt(i).expiresAt <= s.clock.now {
				lease := s.dropHolder(r, i)
				s.expired++
				s.emit(index, EventExpire, r.name, lease, false)
			}
		}
		s.promote(index, r)
		s.reindex(index, r)
	}
}

func (s *State) emit(index uint64, kind EventKind, resource string, lease Lease, queued bool) {
	s.events = append(s.events, Event{
		Kind: kind, Index: index, LogTime: s.clock.now, Resource: resource, Lease: lease, Queued: queued,
	})
}

func (s *State) leaseOf(h *holder) Lease {
	return Lease{
		ID:        h.id,
		ClientID:  s.clients.name(h.client()),
		Mode:      h.mode(),
		Token:     h.token,
		ExpiresAt: h.expiresAt,
		TTLMs:     int64(h.ttlMs),
	}
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
// exclusive holder (never mixed with shared ones) and holders' tokens not
// above the last token issued. A violation is a programming error.
func (s *State) assertInvariants(name string) {
	r := s.resources.find(name)
	if r == nil {
		return
	}
	n := r.holderCount()
	if n == 0 {
		panic("lock: resource kept without holders")
	}
	for i := 0; i < n; i++ {
		h := r.holderAt(i)
		if h.mode() == Exclusive && n > 1 {
			panic("lock: exclusive holder shares the lock")
		}
		// The token-in-memory bug mode breaks this on purpose; the testbed
		// must catch it from the outside, not by crashing the replica.
		if h.token == 0 || (h.token > s.lastToken && !s.cfg.Bugs.TokenInMemory) {
			panic("lock: holder token out of range")
		}
	}
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
