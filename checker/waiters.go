package checker

// waitOutcome is how a queued request left the queue.
type waitOutcome int

const (
	stillWaiting waitOutcome = iota
	wasGranted
	wasCancelled
)

// waiter is one queued request as the trace shows it. A waiter is matched
// to its grant or cancel by lease id when the enqueue event carries one,
// else by client id (a client waits for one lease per resource at a time).
type waiter struct {
	Resource, Client, LeaseID, Mode string
	EnqIndex                        uint64
	EnqTime                         int64
	// Deadline is when the request stops waiting (log time; 0: unknown).
	Deadline int64
	Outcome  waitOutcome
	EndIndex uint64
	EndTime  int64
}

// matches reports whether ev (grant or cancel) concerns w.
func (w *waiter) matches(ev TraceEvent) bool {
	if w.LeaseID != "" {
		return w.LeaseID == ev.LeaseID
	}
	return w.Client != "" && w.Client == ev.Client
}

// grantInfo classifies one grant event.
type grantInfo struct {
	Event TraceEvent
	// Queued is true when the grant went to a waiter from the queue.
	Queued bool
	// Skipped counts waiters enqueued earlier that were still waiting and
	// were not granted in the same log entry: FIFO inversions.
	Skipped int
}

// queueReplay is the per-resource queue history reconstructed from a trace.
type queueReplay struct {
	Waiters []*waiter // in enqueue order
	Grants  []grantInfo
	// Horizon is the last log time the trace reaches.
	Horizon int64
}

// replayQueues rebuilds every resource's wait queue from the trace (in log
// order). Grants sharing a log index form one batch: a run of shared
// waiters granted together is not an inversion among itself, while a waiter
// left behind (say, the exclusive one that should have blocked them) is.
func replayQueues(trace []TraceEvent) queueReplay {
	var r queueReplay
	type batchKey struct {
		resource string
		index    uint64
	}
	batches := make(map[batchKey][]TraceEvent)
	for _, ev := range trace {
		if ev.Kind == KindGrant {
			k := batchKey{ev.Resource, ev.Index}
			batches[k] = append(batches[k], ev)
		}
		r.Horizon = max(r.Horizon, ev.LogTime)
	}
	inBatch := func(w *waiter, batch []TraceEvent) bool {
		for _, g := range batch {
			if w.matches(g) {
				return true
			}
		}
		return false
	}
	queues := make(map[string][]*waiter)
	find := func(q []*waiter, ev TraceEvent) int {
		for i, w := range q {
			if w.matches(ev) {
				return i
			}
		}
		return -1
	}
	for _, ev := range trace {
		q := queues[ev.Resource]
		switch ev.Kind {
		case KindEnqueue:
			w := &waiter{Resource: ev.Resource, Client: ev.Client, LeaseID: ev.LeaseID, Mode: ev.Mode,
				EnqIndex: ev.Index, EnqTime: ev.LogTime, Deadline: ev.ExpiresAt}
			if find(q, ev) >= 0 {
				continue // a retried enqueue keeps its first place
			}
			queues[ev.Resource] = append(q, w)
			r.Waiters = append(r.Waiters, w)
		case KindJoin:
			if i := find(q, ev); i >= 0 {
				q[i].Deadline = ev.ExpiresAt
			}
		case KindCancel:
			if i := find(q, ev); i >= 0 {
				q[i].Outcome, q[i].EndIndex, q[i].EndTime = wasCancelled, ev.Index, ev.LogTime
				queues[ev.Resource] = append(q[:i], q[i+1:]...)
			}
		case KindGrant:
			pos := find(q, ev)
			ahead := q
			if pos >= 0 {
				ahead = q[:pos]
			}
			g := grantInfo{Event: ev, Queued: pos >= 0}
			batch := batches[batchKey{ev.Resource, ev.Index}]
			for _, w := range ahead {
				if !inBatch(w, batch) {
					g.Skipped++
				}
			}
			if pos >= 0 {
				q[pos].Outcome, q[pos].EndIndex, q[pos].EndTime = wasGranted, ev.Index, ev.LogTime
				queues[ev.Resource] = append(q[:pos], q[pos+1:]...)
			}
			r.Grants = append(r.Grants, g)
		}
	}
	return r
}
