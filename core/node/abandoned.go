package node

import (
	"context"
	"errors"
	"sync"

	"github.com/lockstep/lockstep/core/lock"
)

// A waiting acquire whose proposal ends without a definite answer (the
// leader died after taking it, the reply was lost, the caller hung up
// mid-forward) has no caller left on this process, yet its entry may still
// commit and queue the request, and then a grant would hold the lock for a
// TTL with nobody to tell. The process outlives its caller, so hello and
// orphan releases never see it. attempts remembers such acquires until the
// entry applies here, and then cancels the attempt as a caller that hung
// up does (CallerGone: a grant found is released as its orphan).

// abandonedMax bounds the abandoned attempts remembered: an entry that
// never commits is never applied, so the oldest are forgotten (their
// requests, if ever queued, wait out their wait as before).
const abandonedMax = 1024

// attempts tracks this process's waiting acquires from proposal to answer.
type attempts struct {
	mu   sync.Mutex
	byID map[lock.LeaseID]*attemptState
	// abandoned lists the abandoned ids not yet applied, oldest first.
	abandoned []lock.LeaseID
}

// attemptState is what this process knows of one attempt.
type attemptState struct {
	resource string
	// resources are a multi request's (acquire_many); nil for a single one.
	resources []string
	// applied: the acquire entry applied here; queued and waitingFor are
	// its outcome (waitingFor is the first attempt's id for a retry that
	// joined it).
	applied    bool
	queued     bool
	waitingFor lock.LeaseID
	abandoned  bool
}

// begin registers attempt id of cmd (an acquire or acquire_many) before it
// is proposed.
func (a *attempts) begin(id lock.LeaseID, cmd *lock.Command) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID == nil {
		a.byID = make(map[lock.LeaseID]*attemptState)
	}
	a.byID[id] = &attemptState{resource: cmd.Resource, resources: cmd.Resources}
}

// end forgets attempt id: its caller got a definite answer.
func (a *attempts) end(id lock.LeaseID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.byID, id)
}

// abandon marks attempt id as having no caller. It returns the cancel to
// propose now when the entry already applied and queued the request.
func (a *attempts) abandon(id lock.LeaseID) (lock.Command, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.byID[id]
	if st == nil {
		return lock.Command{}, false
	}
	if st.applied {
		delete(a.byID, id)
		return st.cancel(id)
	}
	st.abandoned = true
	a.abandoned = append(a.abandoned, id)
	if len(a.abandoned) > abandonedMax {
		delete(a.byID, a.abandoned[0])
		a.abandoned = a.abandoned[1:]
	}
	return lock.Command{}, false
}

// applied records the outcome of attempt id's entry. It returns the cancel
// to propose when the attempt was abandoned and its request queued.
func (a *attempts) applied(id lock.LeaseID, res lock.Result) (lock.Command, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.byID[id]
	if st == nil {
		return lock.Command{}, false
	}
	st.applied, st.queued, st.waitingFor = true, res.Code == lock.OK && res.Queued, res.Lease.ID
	if !st.abandoned {
		return lock.Command{}, false
	}
	delete(a.byID, id)
	for i, x := range a.abandoned {
		if x == id {
			a.abandoned = append(a.abandoned[:i], a.abandoned[i+1:]...)
			break
		}
	}
	return st.cancel(id)
}

// cancel is the command that ends attempt id's wait for a caller that
// left, if its request was queued.
func (st *attemptState) cancel(id lock.LeaseID) (lock.Command, bool) {
	if !st.queued {
		return lock.Command{}, false
	}
	return lock.Command{Op: lock.OpCancel, Resource: st.resource, Resources: st.resources, LeaseID: st.waitingFor, Owner: id, CallerGone: true}, true
}

// noticeAttempt tells attempts of an applied acquire (or acquire_many) of
// this process; it runs on the apply path, so it only queues.
func (n *Node) noticeAttempt(cmd *lock.Command, res lock.Result) {
	if (cmd.Op != lock.OpAcquire && cmd.Op != lock.OpAcquireMany) || cmd.Host != n.cfg.ID || cmd.Incarnation != n.incarnation {
		return
	}
	if c, ok := n.attempts.applied(cmd.LeaseID, res); ok {
		n.queueRelease(c)
	}
}

// proposeAttempt proposes a waiting acquire (or acquire_many) of this
// process, remembering it as abandoned when the proposal ends without a
// definite answer; a command that does not wait is just proposed.
func (n *Node) proposeAttempt(ctx context.Context, cmd lock.Command) (lock.Result, error) {
	if cmd.WaitMs <= 0 {
		return n.propose(ctx, cmd)
	}
	n.attempts.begin(cmd.LeaseID, &cmd)
	res, err := n.propose(ctx, cmd)
	if errors.Is(err, ErrIndeterminate) {
		n.abandonAttempt(cmd.LeaseID)
	} else {
		n.attempts.end(cmd.LeaseID)
	}
	return res, err
}

// abandonAttempt is called when attempt id's caller leaves without a
// definite answer.
func (n *Node) abandonAttempt(id lock.LeaseID) {
	if c, ok := n.attempts.abandon(id); ok {
		n.queueRelease(c)
	}
}
