package node

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/codec"
	"github.com/lockstep/lockstep/core/lock"
)

// runTicker makes the leader propose a Tick when a lease falls due, so an
// expired lock is freed (and its queue head granted) even when no other
// command arrives. A new leader also ticks once to set its clock baseline in
// the log. Between checks it sleeps TickInterval, or less when the earliest
// expiry comes sooner: within a term log time is this leader's own clock, so
// the tick lands on the expiry instant instead of up to an interval later.
func (n *Node) runTicker() {
	defer n.wg.Done()
	wait := n.cfg.TickInterval
	for {
		select {
		case <-n.done:
			return
		case <-time.After(wait):
		}
		wait = n.cfg.TickInterval
		if n.raft.State() != raft.Leader {
			continue
		}
		due, until := n.tickDue()
		if due {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ProposeTimeout)
			_, err := n.applyLocal(ctx, codec.AppendCommand(nil, &lock.Command{Op: lock.OpTick}))
			cancel()
			if err != nil {
				n.cfg.Logger.Debug("tick not applied", "node", n.cfg.ID, "err", err)
				continue
			}
			due, until = n.tickDue()
		}
		if !due && until > 0 {
			wait = min(wait, until)
		}
	}
}

// tickDue estimates the current log time from this leader's clock and
// reports whether the earliest expiry has passed, and if not, how far
// (this leader's clock) it is; 0 when nothing is due at all.
func (n *Node) tickDue() (due bool, until time.Duration) {
	term := n.raft.CurrentTerm()
	n.fsm.read(func(s *lock.State) {
		logTime, logTerm, mono := s.ClockReading()
		if logTerm != term {
			due = true // no entry of ours applied yet: set the baseline
			return
		}
		next, ok := s.NextExpiry()
		if !ok {
			return
		}
		now := logTime + int64(n.cfg.Clock.Now()) - mono
		due = next <= now
		if !due {
			until = time.Duration(next - now)
		}
	})
	return due, until
}
