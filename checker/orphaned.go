package checker

import (
	"slices"
	"strings"

	"github.com/lockstep/lockstep/models"
)

// Restart is one node process ending and the next one starting: the
// process Incarnation of Node's replica of Group ended, and the next started
// at At. Applied is the highest index it applied; Stored the last index its
// stores held when it ended (what the next process found); Kept the highest
// index up to which they held the committed log (a stored entry past Kept
// was one of its own that the next leader overwrote). Stored and Kept are
// 0 when the harness cannot read the stores, and for a wiped disk.
type Restart struct {
	Node        string `json:"node"`
	Group       int    `json:"group,omitempty"`
	At          int64  `json:"at"`
	Incarnation uint64 `json:"incarnation,omitempty"`
	Applied     uint64 `json:"applied"`
	Stored      uint64 `json:"stored,omitempty"`
	Kept        uint64 `json:"kept,omitempty"`
}

// span is a half-open stretch [from, to) of log time.
type span struct{ from, to int64 }

// orphanedLeases returns, per resource, the log-time spans during which a
// lease whose callers were lost with killed processes blocked it: the gaps README
// "Semantics" accepts, from the grant until the grant's expiry (or an
// earlier free). Waiting behind such a lease is not the service failing to
// make progress. Exactly, a grant is excused when either
//   - it is a queued grant such that, for every host still holding an
//     attempt, the process that proposed the attempt (the acquire entry's
//     host and incarnation) ended in a kill fault with the grant's entry in
//     its stores (Restart.Kept at or past the grant's index), that kill
//     starting before the lease was freed (a grant the dying process had
//     stored may have been delivered, so its restart does not release it);
//   - or it is a direct grant (made by its acquire's own entry) whose answer
//     was lost (directAnswerLost).
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
		if ev.Kind != KindGrant || ev.LeaseID == "" {
			continue
		}
		to := ev.ExpiresAt + ev.Grace
		l := lives[[2]string{ev.Resource, ev.LeaseID}]
		freedAt, freed := int64(0), l != nil && l.freed
		if freed {
			to = min(to, l.freedAt)
		}
		if len(ev.Hosts) == 0 {
			if directAnswerLost(h, ev, firstAt) {
				out[ev.Resource] = append(out[ev.Resource], span{from: ev.LogTime, to: to})
			}
			continue
		}
		if freed {
			if freedAt, freed = firstAt[[2]uint64{uint64(ev.Group), l.freedIndex}]; !freed {
				continue // no time for the free: nothing to say the grant outlived anyone
			}
		}
		outlived := func(host string) bool {
			killed, ok := killedHoldingGrant(h, ev, host)
			return ok && (!freed || killed < freedAt)
		}
		if !slices.ContainsFunc(ev.Hosts, func(host string) bool { return !outlived(host) }) {
			out[ev.Resource] = append(out[ev.Resource], span{from: ev.LogTime, to: to})
		}
	}
	return out
}

// directAnswerLost tells whether grant was made at once by its acquire's own
// entry and its answer was lost with a process that died holding that entry:
// README "Semantics": such a grant is the client's and lasts its TTL unless
// the client retries under its request_id and is answered. Exactly: every
// call the client made under the request's (client, request_id) ended with
// an unknown outcome, and a process of the group was killed with the entry
// in its stores (Restart.Kept at or past its index), the kill starting after
// the request's first call and before the entry first applied anywhere (the
// leader that took the entry, or a member it passed through, died with it in
// flight).
func directAnswerLost(h *History, grant TraceEvent, firstAt map[[2]uint64]int64) bool {
	applied, ok := firstAt[[2]uint64{uint64(grant.Group), grant.Index}]
	if !ok {
		return false
	}
	i := slices.IndexFunc(h.Commands, func(c Command) bool {
		return c.Op == CommandAcquire && c.Group == grant.Group && c.Index == grant.Index && c.LeaseID == grant.LeaseID
	})
	if i < 0 || h.Commands[i].RequestID == "" {
		return false
	}
	cmd := h.Commands[i]
	firstCall, calls := int64(0), 0
	for _, op := range h.Ops {
		if op.Input.Op != models.Acquire || op.Input.ClientID != cmd.Client || op.Input.RequestID != cmd.RequestID {
			continue
		}
		if !op.Output.Unknown {
			return false // the client was answered: the lease is a held one
		}
		if calls == 0 || op.Call < firstCall {
			firstCall = op.Call
		}
		calls++
	}
	if calls == 0 {
		return false
	}
	return slices.ContainsFunc(h.Restarts, func(r Restart) bool {
		if r.Group != grant.Group || r.Kept < grant.Index {
			return false
		}
		killed, ok := killedBefore(h.Faults, r.Node, r.At)
		return ok && firstCall <= killed && killed < applied
	})
}

// killedHoldingGrant returns when the process of host that proposed an
// attempt of grant's request was killed, if it was, with the grant's entry
// in its stores.
func killedHoldingGrant(h *History, grant TraceEvent, host string) (int64, bool) {
	for _, c := range h.Commands {
		if c.Op != CommandAcquire || c.Group != grant.Group || c.LeaseID != grant.LeaseID || c.Host != host || c.Incarnation == 0 {
			continue
		}
		for _, r := range h.Restarts {
			if r.Node == host && r.Group == grant.Group && r.Incarnation == c.Incarnation {
				if r.Kept < grant.Index {
					return 0, false
				}
				return killedBefore(h.Faults, host, r.At)
			}
		}
	}
	return 0, false
}

// killedBefore returns the start of the kill fault on host that was under
// way when its next process started at restartAt (a kill keeps the disk
// and restarts), if there was one.
func killedBefore(faults []Fault, host string, restartAt int64) (int64, bool) {
	for _, f := range faults {
		if strings.HasPrefix(f.Name, "kill") && f.Target == host && f.Start <= restartAt && restartAt <= f.End {
			return f.Start, true
		}
	}
	return 0, false
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
