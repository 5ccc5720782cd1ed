package node

import "time"

// Stage is one step of a request's way through a node, timed when
// Config.Stages is set. The leader's steps split raft.Apply: Enqueue +
// Commit + Apply + Return is the time one applyLocal waits on Raft.
type Stage uint8

const (
	// StagePropose is the whole node part of a request on the member that
	// received it: propose entered to result, forwarding and retries included.
	StagePropose Stage = iota
	// StageForward is a follower's forward round trip to the leader.
	StageForward
	// StageServeForward is the leader's handling of a forwarded command, so
	// Forward minus ServeForward is the cost of the hop itself.
	StageServeForward
	// StageEnqueue is raft.Apply called to the leader loop dispatching the
	// entry: time queued behind the batch the leader is storing.
	StageEnqueue
	// StageCommit is dispatch to the state machine starting the entry's
	// batch: leader StoreLogs, replication, a follower's StoreLogs, the
	// commit and the hand-over to the FSM goroutine.
	StageCommit
	// StageApply is the batch's apply start to this entry applied.
	StageApply
	// StageReturn is the entry applied to the proposer running again.
	StageReturn
	// StageCount is the number of stages.
	StageCount
)

var stageNames = [StageCount]string{"propose", "forward", "serve_forward", "enqueue", "commit", "apply", "return"}

func (s Stage) String() string {
	if s >= StageCount {
		return "unknown"
	}
	return stageNames[s]
}

// StageObserver receives stage durations. It is called on the request path,
// so it must neither block nor allocate.
type StageObserver interface {
	ObserveStage(s Stage, d time.Duration)
}

// stageSince records the time since start under s, if stages are timed.
func (n *Node) stageSince(s Stage, start time.Time) {
	if n.cfg.Stages != nil {
		n.cfg.Stages.ObserveStage(s, time.Since(start))
	}
}

// stageTimes are the moments the state machine saw an entry, carried back
// to its proposer in the apply response (zero unless stages are timed).
type stageTimes struct {
	dispatched time.Time // the leader loop dispatched the entry (Log.AppendedAt)
	batchStart time.Time // the FSM began the entry's batch
	applied    time.Time // the entry was applied
}

// observeApply splits the wait on one raft.Apply, called at called and
// returned at returned, into the leader's stages.
func (n *Node) observeApply(called, returned time.Time, t stageTimes) {
	if n.cfg.Stages == nil || t.dispatched.IsZero() || t.applied.IsZero() {
		return
	}
	steps := [...]struct {
		stage    Stage
		from, to time.Time
	}{
		{StageEnqueue, called, t.dispatched},
		{StageCommit, t.dispatched, t.batchStart},
		{StageApply, t.batchStart, t.applied},
		{StageReturn, t.applied, returned},
	}
	for _, s := range steps {
		// Clamp: AppendedAt and Now are both monotonic on the leader, but
		// a clamp costs nothing and keeps a histogram free of negatives.
		n.cfg.Stages.ObserveStage(s.stage, max(s.to.Sub(s.from), 0))
	}
}
