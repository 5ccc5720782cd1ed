//go:build lockstep_bugs

package lock

import "time"

// bugsBuilt says this build compiles the bug modes in.
const bugsBuilt = true

// forgetOnNewTerm applies the in-memory bug modes at the moments a real
// leader-memory implementation would lose its data: a new leader's first
// entry, and a restore. Without bugs it does nothing.
func (s *State) forgetOnNewTerm() {
	if s.cfg.Bugs.TokenInMemory {
		s.lastToken = 0
	}
	if s.cfg.Bugs.QueueInMemory {
		var unheld []*resource
		for r := range s.resources.all() {
			if r.holderCount() == 0 {
				// Kept by a multi request's queue entry, and in the heap by
				// its deadline: out before the queue goes.
				s.unheap(r)
				unheld = append(unheld, r)
			}
			for len(r.queue()) > 0 {
				w := s.takeWaiter(r, 0)
				s.clients.unref(w.client)
			}
		}
		for _, r := range unheld {
			s.resources.remove(r)
		}
	}
}

// tokenInMemory is Bugs.TokenInMemory.
func (s *State) tokenInMemory() bool { return s.cfg.Bugs.TokenInMemory }

// permitOvercount is Bugs.PermitOvercount.
func (s *State) permitOvercount() bool { return s.cfg.Bugs.PermitOvercount }

// forgetsSettled is Bugs.ForgetSettled.
func (s *State) forgetsSettled() bool { return s.cfg.Bugs.ForgetSettled }

// missesDeadlocks is Bugs.DeadlockMiss.
func (s *State) missesDeadlocks() bool { return s.cfg.Bugs.DeadlockMiss }

// rememberRegranted is Bugs.GraceReviveRegranted's memory: a lease with a
// grace window that is about to be dropped at expiry is kept aside, so a
// late renew can "revive" it.
func (s *State) rememberRegranted(h *holder) {
	if !s.cfg.Bugs.GraceReviveRegranted {
		return
	}
	if _, ok := s.grace[h.id]; !ok {
		return
	}
	if s.regranted == nil {
		s.regranted = make(map[LeaseID]Lease)
	}
	s.regranted[h.id] = s.leaseOf(h)
}

// reviveRegranted is Bugs.GraceReviveRegranted: the renew of a lease whose
// window ended is answered as a revive (same token, a fresh expiry),
// whoever holds the resource now. The mistake is checking that the lease
// had a window rather than that it is still in it.
func (s *State) reviveRegranted(index uint64, cmd *Command) (Result, bool) {
	l, ok := s.regranted[cmd.LeaseID]
	if !ok {
		return Result{}, false
	}
	if cmd.TTLMs != 0 {
		l.TTLMs = cmd.TTLMs
	}
	l.ExpiresAt, l.GraceUntil = s.clock.now+l.TTLMs*int64(time.Millisecond), 0
	s.regranted[cmd.LeaseID] = l
	s.emit(index, EventRevive, cmd.Resource, l, false)
	return Result{Lease: l}, true
}
