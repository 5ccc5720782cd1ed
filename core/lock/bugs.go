//go:build lockstep_bugs

package lock

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
