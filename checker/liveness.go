package checker

import (
	"fmt"
	"time"
)

// checkLiveness demands progress once the cluster is stable, i.e. from the
// end of the last fault plus RecoveryBound (from the start if there were no
// faults). Fault windows are virtual time while the trace is log time,
// which follows the leader's clock but pauses between leaders, so it
// usually lags virtual time and measuring from the virtual stability point
// only makes bounds easier to meet. A leader whose clock steps forward
// (clock faults) carries its group's log time ahead of virtual time, though,
// so a group's stable time starts no earlier than the log time the group
// had reached at the stability point (stableLogTimes). Only
// spans the trace covers are judged: a run that ends before a bound
// elapses proves nothing. Time a waiter spends behind a lease orphaned by
// a killed process (orphanedLeases) is not counted. A lease's deadline is
// its expiry plus ElectionBound ("TTL + ElectionBound after its last renewal").
func checkLiveness(h *History, r queueReplay, trace []TraceEvent, opts Options, f *findings) {
	stable, hasStable := int64(0), false
	for _, ft := range h.Faults {
		if end := ft.End + int64(opts.RecoveryBound); !hasStable || end > stable {
			stable, hasStable = end, true
		}
	}
	// A group's trace ends where that group's log time ends: groups keep
	// separate clocks, so another group's later entries prove nothing.
	groupEnd := map[int]int64{}
	groupOf := map[string]int{}
	for _, ev := range trace {
		groupEnd[ev.Group] = max(groupEnd[ev.Group], ev.LogTime)
		groupOf[ev.Resource] = ev.Group
	}
	horizon := func(resource string) int64 {
		if end, ok := groupEnd[groupOf[resource]]; ok {
			return min(end, r.Horizon)
		}
		return r.Horizon
	}
	stableLog := stableLogTimes(h.Entries, stable)
	from := func(resource string, t int64) int64 {
		if hasStable {
			return max(t, stable, stableLog[groupOf[resource]])
		}
		return t
	}
	if bound := int64(opts.GrantBound); bound > 0 {
		orphaned := orphanedLeases(h, trace)
		for _, w := range r.Waiters {
			start, end := from(w.Resource, w.EnqTime), w.EndTime
			if w.Outcome == stillWaiting {
				end = horizon(w.Resource)
			}
			blocked := blockedOutside(start, end, orphaned[w.Resource])
			if blocked <= bound {
				continue
			}
			what := map[waitOutcome]string{stillWaiting: "is still waiting", wasGranted: "was granted", wasCancelled: "gave up"}[w.Outcome]
			f.add(Violation{
				Check: CheckLiveness, Resource: w.Resource, LeaseIDs: nonEmpty(w.LeaseID), Index: w.EnqIndex,
				Message: fmt.Sprintf("waiter %s on %q (enqueued at index %d) %s after %s of stable time, bound %s",
					w.Client, w.Resource, w.EnqIndex, what, fmtNs(blocked), time.Duration(bound)),
			})
		}
	}
	if bound := int64(opts.ElectionBound); bound > 0 {
		for _, l := range leaseLives(trace) {
			deadline := from(l.resource, l.expires) + bound
			switch {
			case l.freed && l.freedAt > deadline:
				f.add(Violation{
					Check: CheckLiveness, Resource: l.resource, LeaseIDs: []string{l.lease}, Index: l.freedIndex,
					Message: fmt.Sprintf("lease %s on %q expiring at %s was freed only at %s, deadline %s",
						l.lease, l.resource, fmtNs(l.expires), fmtNs(l.freedAt), fmtNs(deadline)),
				})
			case !l.freed && horizon(l.resource) > deadline:
				f.add(Violation{
					Check: CheckLiveness, Resource: l.resource, LeaseIDs: []string{l.lease},
					Message: fmt.Sprintf("lease %s on %q expiring at %s was never freed (trace reaches %s, deadline %s)",
						l.lease, l.resource, fmtNs(l.expires), fmtNs(horizon(l.resource)), fmtNs(deadline)),
				})
			}
		}
	}
}

// stableLogTimes returns, per group, the log time of the group's last entry
// applied at or before the virtual instant stable: where the group's log
// time stood when the cluster became stable. The last entry, not the
// first after, so that a group silent past the stability point is still
// judged from it.
func stableLogTimes(entries []Entry, stable int64) map[int]int64 {
	out := make(map[int]int64)
	for _, e := range entries {
		if e.At <= stable {
			out[e.Group] = max(out[e.Group], e.LogTime)
		}
	}
	return out
}

// leaseLife is a lease's last known expiry (plus its grace window, grace)
// and when (if ever) it was freed, and whether by expiring.
type leaseLife struct {
	resource, lease string
	expires, grace  int64
	freed, expired  bool
	freedAt         int64
	freedIndex      uint64
}

// leaseLives folds the trace into one leaseLife per lease, in grant order.
// A renew after a free re-opens the lease (so it must be freed again).
func leaseLives(trace []TraceEvent) []*leaseLife {
	byKey := make(map[[2]string]*leaseLife)
	var out []*leaseLife
	for _, ev := range trace {
		key := [2]string{ev.Resource, ev.LeaseID}
		l := byKey[key]
		switch ev.Kind {
		case KindGrant:
			if l == nil {
				l = &leaseLife{resource: ev.Resource, lease: ev.LeaseID}
				byKey[key] = l
				out = append(out, l)
			}
			// A lease with a grace window keeps the resource, and must
			// be freed, only once the window after its expiry is over.
			l.expires, l.grace, l.freed = ev.ExpiresAt+ev.Grace, ev.Grace, false
		case KindRenew, KindRevive:
			if l != nil {
				l.expires, l.grace, l.freed = ev.ExpiresAt+ev.Grace, ev.Grace, false
			}
		case KindRelease, KindExpire:
			if l != nil && !l.freed {
				l.freed, l.freedAt, l.freedIndex, l.expired = true, ev.LogTime, ev.Index, ev.Kind == KindExpire
			}
		}
	}
	return out
}

// nonEmpty returns s as a one-element list, or nil when empty.
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
