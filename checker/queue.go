package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep/lockstep/models"
)

// queueSlack is how far a reported log time may be from the entry that
// decided it: the HTTP API reports whole milliseconds.
const queueSlack = 2 * time.Millisecond

// checkQueues holds every status reply's wait queue against the queue the
// committed trace had at that log time: the same waiters (client and
// mode), in the same order, leaving out those whose wait had ended. A
// state machine that drops, reorders or keeps the wrong waiter while its
// events say otherwise shows here. Replies decided too close to a queue
// change (or a deadline) to place exactly are skipped, and so are those
// listing a request after one of its attempts gave up (its deadline is
// then the latest of the attempts left, see attemptsLeft).
func checkQueues(h *History, trace []TraceEvent, f *findings) (compared int) {
	byResource := make(map[string][]TraceEvent)
	for _, ev := range trace {
		switch ev.Kind {
		case KindEnqueue, KindJoin, KindCancel, KindGrant:
			byResource[ev.Resource] = append(byResource[ev.Resource], ev)
		}
	}
	slack := int64(queueSlack)
	left := attemptsLeft(h)
	for _, op := range h.Ops {
		if op.Input.Op != models.Status || op.Output.Unknown || op.Output.Code != "" {
			continue
		}
		at := op.Output.LogTimeNs
		events := byResource[op.Input.Resource]
		if slices.ContainsFunc(events, func(ev TraceEvent) bool { return ev.LogTime >= at-slack && ev.LogTime <= at+slack }) {
			continue
		}
		var before []TraceEvent
		for _, ev := range events {
			if ev.LogTime < at {
				before = append(before, ev)
			}
		}
		var want []models.WaiterView
		ambiguous := false
		for _, w := range replayQueues(before).Waiters {
			if w.Outcome != stillWaiting {
				continue
			}
			switch {
			case w.Deadline > at+slack && left.uncertain(w.LeaseID, at+slack):
				ambiguous = true
			case w.Deadline > at+slack:
				want = append(want, models.WaiterView{Client: w.Client, Mode: w.Mode})
			case w.Deadline >= at-slack:
				ambiguous = true
			}
		}
		if ambiguous {
			continue
		}
		compared++
		if got := op.Output.Queue; !slices.Equal(got, want) {
			f.add(Violation{Check: CheckQueue, Resource: op.Input.Resource, At: op.Return,
				Message: fmt.Sprintf("status at %s listed queue [%s], the trace had [%s]",
					fmtNs(at), describeQueue(got), describeQueue(want))})
		}
	}
	return compared
}

func describeQueue(q []models.WaiterView) string {
	parts := make([]string, len(q))
	for i, w := range q {
		parts[i] = w.Client + ":" + w.Mode
	}
	return strings.Join(parts, " ")
}

// checkQueueProgress replays each resource's holders and queue from the
// trace and demands, after every entry that freed or cancelled something
// on it, that the queue moved as far as it could: a lock with no holder
// keeps no queue, and shared holders never leave a shared request waiting
// at the head. It also demands that a queued request is never granted at
// or after its deadline (its wait had ended).
func checkQueueProgress(trace []TraceEvent, f *findings) {
	type state struct {
		holders map[string]bool // lease -> exclusive
		queue   []TraceEvent    // enqueue events (ExpiresAt: deadline), head first
		// permits is the semaphore's N as its last grant said, 0 for a
		// plain lock.
		permits int
	}
	states := make(map[string]*state)
	get := func(r string) *state {
		if states[r] == nil {
			states[r] = &state{holders: make(map[string]bool)}
		}
		return states[r]
	}
	dequeue := func(s *state, lease string) (TraceEvent, bool) {
		for i, w := range s.queue {
			if w.LeaseID == lease {
				s.queue = slices.Delete(s.queue, i, i+1)
				return w, true
			}
		}
		return TraceEvent{}, false
	}
	check := func(r string, index uint64, at int64) {
		s := states[r]
		if s == nil || len(s.queue) == 0 {
			return
		}
		head := s.queue[0]
		allShared := true
		for _, exclusive := range s.holders {
			allShared = allShared && !exclusive
		}
		switch {
		case len(s.holders) == 0 && head.Many == "":
			// A multi request at the head keeps a free lock queued while
			// it waits for its other resources; otherwise the head was due.
			f.add(Violation{Check: CheckQueue, Resource: r, Index: index, LeaseIDs: []string{head.LeaseID},
				Message: fmt.Sprintf("after index %d %q has no holder but %d queued request(s), head %s (%s)", index, r, len(s.queue), head.LeaseID, head.Client)})
		case allShared && !isExclusive(head.Mode) && head.Many == "":
			// As above: a shared multi request may wait here for the rest.
			f.add(Violation{Check: CheckQueue, Resource: r, Index: index, LeaseIDs: []string{head.LeaseID},
				Message: fmt.Sprintf("after index %d shared request %s (%s) waits at the head of %q behind shared holders only", index, head.LeaseID, head.Client, r)})
		case s.permits > 1 && len(s.holders) < s.permits:
			f.add(Violation{Check: CheckQueue, Resource: r, Index: index, LeaseIDs: []string{head.LeaseID},
				Message: fmt.Sprintf("after index %d request %s (%s) waits at the head of %q while %d of its %d permits are free", index, head.LeaseID, head.Client, r, s.permits-len(s.holders), s.permits)})
		}
	}
	var pending map[string]bool // resources freed or cancelled in the current index
	var index uint64
	var at int64
	flush := func() {
		for r := range pending {
			check(r, index, at)
		}
	}
	for _, ev := range trace {
		if ev.Index != index {
			flush()
			pending, index = make(map[string]bool), ev.Index
		}
		at = ev.LogTime
		s := get(ev.Resource)
		switch ev.Kind {
		case KindEnqueue:
			s.queue = append(s.queue, ev)
		case KindJoin:
			for i := range s.queue {
				if s.queue[i].LeaseID == ev.LeaseID {
					s.queue[i].ExpiresAt = ev.ExpiresAt
				}
			}
		case KindCancel:
			dequeue(s, ev.LeaseID)
			pending[ev.Resource] = true
		case KindGrant:
			if w, ok := dequeue(s, ev.LeaseID); ok && w.ExpiresAt != 0 && ev.LogTime >= w.ExpiresAt {
				f.add(Violation{Check: CheckQueue, Resource: ev.Resource, Index: ev.Index, LeaseIDs: []string{ev.LeaseID},
					Message: fmt.Sprintf("queued request %s (%s) granted at %s, its wait ended at %s", ev.LeaseID, ev.Client, fmtNs(ev.LogTime), fmtNs(w.ExpiresAt))})
			}
			s.holders[ev.LeaseID] = isExclusive(ev.Mode)
			s.permits = ev.Permits
		case KindRelease, KindExpire:
			delete(s.holders, ev.LeaseID)
			pending[ev.Resource] = true
		}
	}
	flush()
}
