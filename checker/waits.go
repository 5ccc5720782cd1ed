package checker

import (
	"fmt"
	"slices"
)

// CheckWaits names the check of the contract "a queued request waits as
// long as one of its callers does" (README, Semantics), judged on the
// committed log: a queued request may leave its queue ungranted only once
// every attempt at it (the acquire that queued it and each retry under its
// request id that joined it with a later deadline) is over: its wait
// elapsed, its caller gave up (a cancel naming that attempt), its node
// process is gone (a hello of a later process of that node), or the
// entry's leader stamped its node unreachable.
const CheckWaits = "waits"

// waitAttempt is one caller of a queued request: its acquire's lease id,
// the process holding it and the log time its wait ends.
type waitAttempt struct {
	id          string
	host        string
	incarnation uint64
	deadline    int64
}

// checkWaits replays each group's committed entries. It follows single
// requests only (a multi request's parts leave together, see CheckAtomic),
// and only the attempts the trace shows (enqueue, and joins that moved the
// deadline), so a flagged attempt surely waited; an attempt is taken as
// over as soon as anything in its entry could have ended it.
func checkWaits(h *History, trace []TraceEvent, f *findings) {
	if len(h.Commands) == 0 {
		return
	}
	queued := make(map[int]map[string][]waitAttempt)
	for _, e := range committedEntries(h, trace) {
		q := queued[e.group]
		if q == nil {
			q = make(map[string][]waitAttempt)
			queued[e.group] = q
		}
		cmd := e.cmd
		if cmd != nil {
			endAttempts(q, cmd)
		}
		for _, ev := range e.events {
			if ev.Many != "" {
				continue
			}
			switch ev.Kind {
			case KindEnqueue, KindJoin:
				if cmd != nil && cmd.Op == CommandAcquire && (ev.Kind == KindJoin || cmd.LeaseID == ev.LeaseID) {
					q[ev.LeaseID] = append(q[ev.LeaseID], waitAttempt{id: cmd.LeaseID, host: cmd.Host,
						incarnation: cmd.Incarnation, deadline: ev.ExpiresAt})
				}
			case KindGrant:
				delete(q, ev.LeaseID)
			case KindCancel:
				for _, a := range q[ev.LeaseID] {
					if a.deadline > ev.LogTime {
						f.add(Violation{Check: CheckWaits, Resource: ev.Resource, LeaseIDs: []string{ev.LeaseID, a.id}, Index: ev.Index,
							Message: fmt.Sprintf("group %d index %d cancelled %s's queued request %s on %q while its attempt %s (node %s) still waited, %s before its wait ended, its caller not gone",
								e.group+1, e.index, ev.Client, ev.LeaseID, ev.Resource, a.id, a.host, fmtNs(a.deadline-ev.LogTime))})
						break
					}
				}
				delete(q, ev.LeaseID)
			}
		}
	}
}

// endAttempts drops from q the attempts cmd may have ended.
func endAttempts(q map[string][]waitAttempt, cmd *Command) {
	var gone func(waitAttempt) bool
	switch {
	case len(cmd.Suspects) > maxSuspects:
	case len(cmd.Suspects) > 0:
		// Any attempt held by a suspect may have been dropped by this
		// entry (only at the head of a queue, but which it was is not
		// known here).
		gone = func(a waitAttempt) bool { return slices.Contains(cmd.Suspects, a.host) }
	}
	switch cmd.Op {
	case CommandHello:
		hello := func(a waitAttempt) bool { return a.host == cmd.Host && a.incarnation != cmd.Incarnation }
		gone = either(gone, hello)
	case CommandCancel:
		if cmd.Owner == "" {
			delete(q, cmd.LeaseID)
		} else if as, ok := q[cmd.LeaseID]; ok {
			q[cmd.LeaseID] = slices.DeleteFunc(as, func(a waitAttempt) bool { return a.id == cmd.Owner })
		}
	}
	if gone == nil {
		return
	}
	for lease, as := range q {
		q[lease] = slices.DeleteFunc(as, gone)
	}
}

// either is a predicate true where a or b (nil: never) is.
func either(a, b func(waitAttempt) bool) func(waitAttempt) bool {
	if a == nil {
		return b
	}
	return func(w waitAttempt) bool { return a(w) || b(w) }
}
