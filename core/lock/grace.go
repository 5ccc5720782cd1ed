package lock

import "time"

// A grace window (Command.GraceMs on an acquire; Chubby's lock-delay)
// keeps a lease's resource unavailable for a while after the lease
// expires, so a holder that was merely slow (paused, partitioned) can come
// back without anyone else having been granted the lock meanwhile:
//
//   - at expiry (log time reaches ExpiresAt) a lease with grace > 0 enters
//     its window, which ends at ExpiresAt+grace (EventGrace). It stays
//     among the holders, so it blocks every grant it would block while
//     held and counts against quotas, but it is no valid holder: validate
//     says not valid (its TTL ran out, so a fenced downstream must refuse
//     it);
//   - a renew in the window revives it with the same token, until the
//     renew's log time plus its TTL (EventRevive); a release in the window
//     frees the resource at once (the client says it is done);
//   - once the window ends the lease is gone for good (EventExpire) and the
//     queue head is granted.
//
// A release never starts a window: only an expiry does. Grace is at most
// the TTL; a renew to a shorter TTL shortens the grace with it.
//
// The window end is kept in the holder's expiresAt while the lease waits in
// it, so the expiry heap needs nothing new; graceLease keeps when the TTL
// ran out. Leases without grace have no entry, so they cost nothing.
type graceLease struct {
	ms uint32
	// expired is the log time the lease's TTL ran out (its window began);
	// 0 while it is held.
	expired int64
}

// setGrace gives the new holder id a grace window of ms.
func (s *State) setGrace(id LeaseID, ms int64) {
	if ms <= 0 {
		return
	}
	if s.grace == nil {
		s.grace = make(map[LeaseID]graceLease)
	}
	s.grace[id] = graceLease{ms: uint32(ms)}
}

// enterGrace starts holder h's window if it has one and that window is not
// over already (log time may jump past it), and reports whether it did.
// h's expiresAt must have been reached.
func (s *State) enterGrace(index uint64, r *resource, h *holder) bool {
	g, ok := s.grace[h.id]
	if !ok || g.expired != 0 {
		return false
	}
	end := h.expiresAt + int64(g.ms)*int64(time.Millisecond)
	if end <= s.clock.now {
		return false
	}
	g.expired, h.expiresAt = h.expiresAt, end
	s.grace[h.id] = g
	s.emit(index, EventGrace, r.name, s.leaseOf(h), false)
	return true
}

// renewGrace prepares holder h for a renew to ttlMs: a lease in its window
// is revived (the caller emits EventRevive instead of EventRenew), and a
// grace longer than the new TTL is cut to it.
func (s *State) renewGrace(h *holder, ttlMs uint32) (revived bool) {
	g, ok := s.grace[h.id]
	if !ok {
		return false
	}
	revived = g.expired != 0
	g.expired = 0
	g.ms = min(g.ms, ttlMs)
	s.grace[h.id] = g
	return revived
}

// withoutGrace is l with no grace window.
func (l Lease) withoutGrace() Lease {
	l.GraceMs, l.GraceUntil = 0, 0
	return l
}

// graceOf fills in lease l (of holder h) what its grace window says: while
// in the window, ExpiresAt is when the TTL ran out and GraceUntil the end.
func (s *State) graceOf(h *holder, l *Lease) {
	g, ok := s.grace[h.id]
	if !ok {
		return
	}
	l.GraceMs = int64(g.ms)
	if g.expired != 0 {
		l.ExpiresAt, l.GraceUntil = g.expired, h.expiresAt
	}
}
