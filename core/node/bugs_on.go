//go:build lockstep_bugs

package node

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/codec"
	"github.com/lockstep/lockstep/core/lock"
)

// Bugs lists every bug mode this build can switch on.
var Bugs = []Bug{BugFollowerGrant, BugLocalRenew, BugWallClockExpiry, BugTokenInMemory, BugQueueInMemory,
	BugForgetSettled, BugOrphanWaiters, BugReleaseOnGiveUp, BugUnknownAsUnavailable, BugStaleValidate,
	BugPermitOvercount, BugDeadlockMiss, BugDeadlockMissCross,
	BugGraceReviveRegranted}

// bug reports whether bug mode b is on.
func (n *Node) bug(b Bug) bool { return n.cfg.Hooks != nil && n.cfg.Hooks.Bug == b }

// BugOn reports whether bug mode b is on, for the bug paths of the
// packages above the node (core/service's stale-validate).
func (n *Node) BugOn(b Bug) bool { return n.bug(b) }

// lockBugs are the state machine's own bug modes (lock.Bugs) that b turns on.
func (b Bug) lockBugs() lock.Bugs {
	return lock.Bugs{TokenInMemory: b == BugTokenInMemory, QueueInMemory: b == BugQueueInMemory, ForgetSettled: b == BugForgetSettled,
		PermitOvercount: b == BugPermitOvercount, DeadlockMiss: b == BugDeadlockMiss,
		GraceReviveRegranted: b == BugGraceReviveRegranted}
}

// bugFSM is what raft applies entries to: f itself, or under
// BugWallClockExpiry f behind wallClockFSM.
func (n *Node) bugFSM(f *fsm) raft.BatchingFSM {
	if !n.bug(BugWallClockExpiry) {
		return f
	}
	w := &wallClockFSM{fsm: f, clock: n.cfg.Clock, stored: make(map[uint64][]byte)}
	if probe := f.onApply; probe != nil {
		// The probe sees the entry as stored: the mistake is in how a
		// replica reads the log, not in what the log holds.
		f.onApply = func(index uint64, _ []byte, st *lock.State) { probe(index, w.stored[index], st) }
	}
	return w
}

// wallClockFSM is BugWallClockExpiry: each replica restamps every entry
// with its own clock as it applies it, in one endless "term" 0, instead of
// using the leader's reading carried in the log.
type wallClockFSM struct {
	*fsm
	clock Clock
	// stored holds the batch being applied as the log has it, by index
	// (raft applies on one goroutine).
	stored map[uint64][]byte
}

func (w *wallClockFSM) Apply(l *raft.Log) interface{} {
	return w.ApplyBatch([]*raft.Log{l})[0]
}

func (w *wallClockFSM) ApplyBatch(logs []*raft.Log) []interface{} {
	restamped := make([]*raft.Log, len(logs))
	for i, l := range logs {
		w.stored[l.Index] = l.Data
		restamped[i] = w.restamp(l)
	}
	defer clear(w.stored)
	return w.fsm.ApplyBatch(restamped)
}

// restamp copies l with this replica's clock in its stamp. An entry it
// cannot decode goes on unchanged, to fail as it would have; so does a
// pre-batching single-command entry, which this build never writes.
func (w *wallClockFSM) restamp(l *raft.Log) *raft.Log {
	if l.Type != raft.LogCommand {
		return l
	}
	e, err := codec.DecodeEntry(l.Data)
	if err != nil || e.Single {
		return l
	}
	out := *l
	out.Term = 0
	out.Data = codec.AppendEntry(nil, codec.Stamp{Mono: int64(w.clock.Now()), Suspects: e.Stamp.Suspects}, e.Commands)
	return &out
}

// followerGrant is BugFollowerGrant: trust the local state on a follower.
func (n *Node) followerGrant(cmd lock.Command) (lock.Result, bool) {
	if !n.bug(BugFollowerGrant) || n.IsLeader() || cmd.WaitMs > 0 {
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
	if !n.bug(BugLocalRenew) || !n.IsLeader() {
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
