package node

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/lock"
)

// runTicker makes the leader propose a Tick when a lease falls due, so an
// expired lock is freed (and its queue head granted) even when no other
// command arrives. A new leader also ticks once to set its clock baseline in
// the log.
func (n *Node) runTicker() {
	defer n.wg.Done()
	for {
		select {
		case <-n.done:
			return
		case <-time.After(n.cfg.TickInterval):
		}
		if n.raft.State() != raft.Leader || !n.tickDue() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ProposeTimeout)
		_, err := n.applyLocal(ctx, lock.Command{Op: lock.OpTick})
		cancel()
		if err != nil {
			n.cfg.Logger.Debug("tick not applied", "node", n.cfg.ID, "err", err)
		}
	}
}

// tickDue estimates the current log time from this leader's clock and
// reports whether the earliest expiry has passed.
func (n *Node) tickDue() bool {
	term := n.raft.CurrentTerm()
	due := false
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
	})
	return due
}
