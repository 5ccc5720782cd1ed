package node

import (
	"context"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

// localGrant reports id's grant if this node has already applied it.
func (n *Node) localGrant(resource string, id lock.LeaseID) (lock.Result, bool) {
	var res lock.Result
	found := false
	n.fsm.read(func(s *lock.State) {
		st := s.Status(resource)
		for _, h := range st.Holders {
			if h.ID == id {
				res = lock.Result{Granted: true, Lease: h, LogTime: s.Metrics().LogTime}
				found = true
			}
		}
	})
	return res, found
}

// acquireRacing is the throughput policy: try, and on refusal wait for the
// resource to free and try again, racing every other waiter. Fast, unfair.
func (n *Node) acquireRacing(ctx context.Context, cmd lock.Command) (lock.Result, error) {
	wait := time.NewTimer(time.Duration(cmd.WaitMs) * time.Millisecond)
	defer wait.Stop()
	try := cmd
	try.WaitMs = 0
	for {
		freed, stop := n.notify.waitFreed(cmd.Resource)
		res, err := n.propose(ctx, try)
		if err == nil {
			err = resultError(res)
		}
		if err != nil || res.Granted {
			stop()
			return res, err
		}
		select {
		case <-freed:
			stop()
		case <-wait.C:
			stop()
			return res, nil
		case <-ctx.Done():
			stop()
			return res, ctx.Err()
		}
	}
}

// Release frees a lease; the queue head is granted in the same entry.
func (n *Node) Release(ctx context.Context, resource string, id lock.LeaseID) (lock.Result, error) {
	return n.simple(ctx, lock.Command{Op: lock.OpRelease, Resource: resource, LeaseID: id})
}

// Renew extends a live lease to now+ttl (ttlMs 0 keeps its TTL).
func (n *Node) Renew(ctx context.Context, resource string, id lock.LeaseID, ttlMs int64) (lock.Result, error) {
	cmd := lock.Command{Op: lock.OpRenew, Resource: resource, LeaseID: id, TTLMs: ttlMs}
	if res, ok, err := n.localRenew(cmd); ok {
		return res, err
	}
	return n.simple(ctx, cmd)
}

// Status reads resource through the log, so the answer is linearizable.
func (n *Node) Status(ctx context.Context, resource string) (lock.Result, error) {
	return n.simple(ctx, lock.Command{Op: lock.OpStatus, Resource: resource})
}

func (n *Node) simple(ctx context.Context, cmd lock.Command) (lock.Result, error) {
	if err := n.cfg.Lock.Check(&cmd); err != nil {
		return lock.Result{}, err
	}
	res, err := n.propose(ctx, cmd)
	if err != nil {
		return res, err
	}
	return res, resultError(res)
}
