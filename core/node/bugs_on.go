//go:build lockstep_bugs

package node

import (
	"context"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

// Bugs lists every bug mode this build can switch on.
var Bugs = []Bug{BugFollowerGrant, BugLocalRenew, BugWallClockExpiry, BugTokenInMemory, BugQueueInMemory,
	BugForgetSettled, BugOrphanWaiters, BugReleaseOnGiveUp, BugUnknownAsUnavailable}

// bug reports whether bug mode b is on.
func (n *Node) bug(b Bug) bool { return n.cfg.Bug == b }

// followerGrant is BugFollowerGrant: trust the local state on a follower.
func (n *Node) followerGrant(cmd lock.Command) (lock.Result, bool) {
	if n.IsLeader() || cmd.WaitMs > 0 {
		return lock.Result{}, false
	}
	var res lock.Result
	ok := false
	n.fsm.read(func(s *lock.State) {
		st := s.Status(cmd.Resource)
		if len(st.Holders) > 0 && !(cmd.Mode == lock.Shared && st.Holders[0].Mode == lock.Shared) {
			return
		}
		m := s.Metrics()
		ok = true
		res = lock.Result{Granted: true, LogTime: m.LogTime, Lease: lock.Lease{
			ID: cmd.LeaseID, ClientID: cmd.ClientID, Mode: cmd.Mode, Token: m.LastToken + 1,
			ExpiresAt: m.LogTime + cmd.TTLMs*int64(time.Millisecond), TTLMs: cmd.TTLMs,
		}}
	})
	if ok {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ProposeTimeout)
			defer cancel()
			_, _ = n.propose(ctx, cmd)
		}()
	}
	return res, ok
}

// localRenew is BugLocalRenew: answer a renew from the leader's state alone.
func (n *Node) localRenew(cmd lock.Command) (lock.Result, bool, error) {
	if !n.IsLeader() {
		return lock.Result{}, false, nil
	}
	var res lock.Result
	found := false
	n.fsm.read(func(s *lock.State) {
		now := s.Metrics().LogTime
		for _, h := range s.Status(cmd.Resource).Holders {
			if h.ID == cmd.LeaseID {
				ttl := cmd.TTLMs
				if ttl == 0 {
					ttl = h.TTLMs
				}
				h.ExpiresAt = now + ttl*int64(time.Millisecond)
				res, found = lock.Result{Lease: h, LogTime: now}, true
			}
		}
	})
	if !found {
		return lock.Result{}, true, ErrNotHolder
	}
	return res, true, nil
}
