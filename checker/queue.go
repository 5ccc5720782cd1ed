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
// change (or a deadline) to place exactly are skipped.
func checkQueues(h *History, trace []TraceEvent, f *findings) (compared int) {
	byResource := make(map[string][]TraceEvent)
	for _, ev := range trace {
		switch ev.Kind {
		case KindEnqueue, KindJoin, KindCancel, KindGrant:
			byResource[ev.Resource] = append(byResource[ev.Resource], ev)
		}
	}
	slack := int64(queueSlack)
	for _, op := range h.Ops {
		if op.Input.Op != models.Status || op.Output.Unknown || op.Output.Code != "" {
			continue
		}
		at := op.Output.LogTime
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
