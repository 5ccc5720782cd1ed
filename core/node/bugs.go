package node

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

// Bug names one realistic mistake the testbed must be able to catch. Each
// is a real code path, selected by flag, never on by default.
type Bug string

const (
	// BugFollowerGrant: a follower answers a try-lock from its own
	// (possibly stale) state and proposes the grant in the background.
	BugFollowerGrant Bug = "follower-grant"
	// BugLocalRenew: the leader extends a lease in its reply without going
	// through Raft, so the replicated expiry never moves.
	BugLocalRenew Bug = "local-renew"
	// BugWallClockExpiry: each replica expires leases by its own clock at
	// apply time instead of the leader's clock carried in the log.
	BugWallClockExpiry Bug = "wall-clock-expiry"
	// BugTokenInMemory: the fencing counter restarts on leader change/restore.
	BugTokenInMemory Bug = "token-in-memory"
	// BugQueueInMemory: wait queues vanish on leader change/restore.
	BugQueueInMemory Bug = "queue-in-memory"
)

// Bugs lists every bug mode.
var Bugs = []Bug{BugFollowerGrant, BugLocalRenew, BugWallClockExpiry, BugTokenInMemory, BugQueueInMemory}

func (b Bug) validate() error {
	if b == "" {
		return nil
	}
	for _, known := range Bugs {
		if b == known {
			return nil
		}
	}
	return fmt.Errorf("%w: unknown bug mode %q", ErrConfig, b)
}

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
