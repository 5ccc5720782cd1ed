package checker

import (
	"slices"
	"strings"
)

// Restart is one node process ending and the next one starting: Applied is
// the highest index of Group the ended process applied (so stored; 0 with
// no group when it applied nothing), At the virtual time the next process
// started.
type Restart struct {
	Node    string `json:"node"`
	Group   int    `json:"group,omitempty"`
	At      int64  `json:"at"`
	Applied uint64 `json:"applied"`
}

// span is a half-open stretch [from, to) of log time.
type span struct{ from, to int64 }

// orphanedLeases returns, per resource, the log-time spans during which a
// lease held only for callers of killed processes blocked it: the gap README
// "Semantics" accepts (a grant the dying process had stored may have been
// delivered, so its restart does not release it and it lasts its TTL).
// Narrowly: a queued grant whose every remaining attempt's host was killed
// (a kill fault) after its process had applied the grant's entry, that
// process having started before the host's attempt was proposed; from the
// grant until the grant's expiry (or an earlier free). Waiting behind such
// a lease is not the service failing to make progress.
func orphanedLeases(h *History, trace []TraceEvent) map[string][]span {
	firstAt := map[[2]uint64]int64{} // (group, index) -> virtual time first applied
	for _, e := range h.Entries {
		firstAt[[2]uint64{uint64(e.Group), e.Index}] = e.At
	}
	lives := map[[2]string]*leaseLife{}
	for _, l := range leaseLives(trace) {
		lives[[2]string{l.resource, l.lease}] = l
	}
	out := map[string][]span{}
	for _, ev := range trace {
		if ev.Kind != KindGrant || len(ev.Hosts) == 0 || ev.LeaseID == "" {
			continue
		}
		if !slices.ContainsFunc(ev.Hosts, func(host string) bool { return !killedAfterApplying(h, ev, host, firstAt) }) {
			to := ev.ExpiresAt
			if l := lives[[2]string{ev.Resource, ev.LeaseID}]; l != nil && l.freed {
				to = min(to, l.freedAt)
			}
			out[ev.Resource] = append(out[ev.Resource], span{from: ev.LogTime, to: to})
		}
	}
	return out
}

// killedAfterApplying reports whether host's process that held an attempt
// of grant's request applied the grant and then ended in a kill fault.
func killedAfterApplying(h *History, grant TraceEvent, host string, firstAt map[[2]uint64]int64) bool {
	// The host's attempt: its latest acquire of this lease.
	proposed, found := int64(0), false
	for _, c := range h.Commands {
		if c.Op == CommandAcquire && c.Group == grant.Group && c.LeaseID == grant.LeaseID && c.Host == host {
			if at, ok := firstAt[[2]uint64{uint64(c.Group), c.Index}]; ok {
				proposed, found = at, true
			}
		}
	}
	if !found {
		return false
	}
	started := int64(0) // the process's start: the host's previous restart
	for _, r := range h.Restarts {
		// A process that applied nothing does not know its group.
		if r.Node != host || (r.Group != grant.Group && r.Applied > 0) {
			continue
		}
		if r.Applied < grant.Index {
			started = r.At
			continue
		}
		// The first process of host to have applied the grant ended here.
		return started <= proposed && endedByKill(h.Faults, host, r.At)
	}
	return false
}

// endedByKill reports whether a kill fault on host was under way when its
// next process started at restartAt (a kill keeps the disk and restarts).
func endedByKill(faults []Fault, host string, restartAt int64) bool {
	for _, f := range faults {
		if strings.HasPrefix(f.Name, "kill") && f.Target == host && f.Start <= restartAt && restartAt <= f.End {
			return true
		}
	}
	return false
}

// blockedOutside is how much of [start, end) lies outside every span (spans
// of one resource may overlap).
func blockedOutside(start, end int64, spans []span) int64 {
	var cut []span
	for _, s := range spans {
		if lo, hi := max(s.from, start), min(s.to, end); lo < hi {
			cut = append(cut, span{from: lo, to: hi})
		}
	}
	slices.SortFunc(cut, func(a, b span) int { return int(min(max(a.from-b.from, -1), 1)) })
	covered, reach := int64(0), start
	for _, s := range cut {
		if s.to <= reach {
			continue
		}
		covered += s.to - max(s.from, reach)
		reach = s.to
	}
	return end - start - covered
}
