package checker

import (
	"cmp"
	"fmt"
	"slices"
)

// checkFencing verifies the safety invariants outside the client's view:
// the fenced store never accepts a superseded holder's write, tokens grow
// strictly per resource, log time never runs backwards in log order, and no
// conflicting holders overlap in log time (a semaphore of N: at no log
// time more than N live leases, see checkOverlaps).
func checkFencing(h *History, trace []TraceEvent, f *findings) {
	checkStaleWrites(h.Writes, h.Grants, f)
	checkTraceTokens(trace, f)
	checkLogTimeOrder(trace, f)
	checkOverlaps(leaseSegments(trace), f)
}

// checkStaleWrites replays writes and grant returns in Seq order. Once a
// grant with token t has reached another holder, an accepted write with a
// lower token means a stale holder changed the resource behind its back.
func checkStaleWrites(writes []Write, grants []GrantReturned, f *findings) {
	type event struct {
		seq   uint64
		write *Write
		grant *GrantReturned
	}
	events := make([]event, 0, len(writes)+len(grants))
	for i := range writes {
		events = append(events, event{seq: writes[i].Seq, write: &writes[i]})
	}
	for i := range grants {
		events = append(events, event{seq: grants[i].Seq, grant: &grants[i]})
	}
	slices.SortFunc(events, func(a, b event) int { return cmp.Compare(a.seq, b.seq) })
	newest := make(map[string]GrantReturned)
	for _, e := range events {
		if g := e.grant; g != nil {
			if cur, ok := newest[g.Resource]; !ok || g.Token > cur.Token {
				newest[g.Resource] = *g
			}
			continue
		}
		w := e.write
		g, ok := newest[w.Resource]
		if w.Accepted && ok && w.Token < g.Token && w.LeaseID != g.LeaseID {
			f.add(Violation{
				Check: CheckFencing, Resource: w.Resource, LeaseIDs: []string{w.LeaseID, g.LeaseID}, At: w.At,
				Message: fmt.Sprintf("stale write accepted: %s wrote %q with #%d (seq %d) after #%d reached %s (seq %d)",
					w.Client, w.Resource, w.Token, w.Seq, g.Token, g.LeaseID, g.Seq),
			})
		}
	}
}

// checkTraceTokens demands that grant tokens strictly increase per resource
// in log order and that no two leases share one.
func checkTraceTokens(trace []TraceEvent, f *findings) {
	type last struct {
		token uint64
		lease string
	}
	latest := make(map[string]last)
	owner := make(map[string]map[uint64]string)
	for _, ev := range trace {
		if ev.Kind != KindGrant {
			continue
		}
		if owner[ev.Resource] == nil {
			owner[ev.Resource] = make(map[uint64]string)
		}
		if prev, seen := owner[ev.Resource][ev.Token]; seen {
			if prev != ev.LeaseID {
				f.add(Violation{
					Check: CheckFencing, Resource: ev.Resource, LeaseIDs: []string{prev, ev.LeaseID}, Index: ev.Index,
					Message: fmt.Sprintf("token #%d reused on %q by %s and %s (index %d)", ev.Token, ev.Resource, prev, ev.LeaseID, ev.Index),
				})
			}
			continue // the same lease's grant seen twice changes nothing
		}
		owner[ev.Resource][ev.Token] = ev.LeaseID
		if l, ok := latest[ev.Resource]; ok && ev.Token < l.token {
			f.add(Violation{
				Check: CheckFencing, Resource: ev.Resource, LeaseIDs: []string{l.lease, ev.LeaseID}, Index: ev.Index,
				Message: fmt.Sprintf("token decreased on %q: %s got #%d after %s got #%d (index %d)", ev.Resource, ev.LeaseID, ev.Token, l.lease, l.token, ev.Index),
			})
		}
		latest[ev.Resource] = last{token: ev.Token, lease: ev.LeaseID}
	}
}

// checkLogTimeOrder demands non-decreasing log time in log order: expiry is
// judged by it, so a step backwards can resurrect an expired lease. It is
// judged per resource: a resource lives in one Raft group, while the trace
// interleaves groups whose indices and log times are unrelated.
func checkLogTimeOrder(trace []TraceEvent, f *findings) {
	prev := make(map[string]TraceEvent)
	for _, ev := range trace {
		p, seen := prev[ev.Resource]
		prev[ev.Resource] = ev
		if seen && ev.LogTime < p.LogTime {
			f.add(Violation{
				Check: CheckFencing, Resource: ev.Resource, Index: ev.Index,
				Message: fmt.Sprintf("log time went backwards on %q at index %d: %s after %s at index %d",
					ev.Resource, ev.Index, fmtNs(ev.LogTime), fmtNs(p.LogTime), p.Index),
			})
		}
	}
}

// segment is a span [Start, End) of log time in which a lease was held,
// and [Start, Block) in which it kept the resource: End, or for a lease
// with a grace window up to End plus the window, ended sooner by a
// release, the window's expiry or a revive (which opens a new span).
type segment struct {
	Resource, Lease string
	Exclusive       bool
	Start, End      int64
	Block           int64
	Index           uint64 // log index where the span began
	// Permits is the N of the semaphore the lease is a permit of (its
	// grant's TraceEvent.Permits), 0 for a plain lock.
	Permits int
}

// blockEnd is when the segment stopped keeping its resource (Block, never
// before End).
func (s segment) blockEnd() int64 { return max(s.Block, s.End) }

// leaseSegments derives from the trace when each lease was held. A lease is
// held from its grant until the earlier of its expiry and its release or
// expire event; a renew before expiry extends the span, and a renew after
// expiry (a server bug) opens a new one so the overlap check still sees it.
func leaseSegments(trace []TraceEvent) []segment {
	type open struct {
		seg     segment
		expires int64
		grace   int64
		held    bool
	}
	leases := make(map[[2]string]*open)
	var order [][2]string
	var out []segment
	closeAt := func(o *open, end int64) {
		o.seg.End = min(o.expires, end)
		o.seg.Block = max(o.seg.End, min(o.expires+o.grace, end))
		out = append(out, o.seg)
		o.held = false
	}
	for _, ev := range trace {
		key := [2]string{ev.Resource, ev.LeaseID}
		o := leases[key]
		switch ev.Kind {
		case KindGrant:
			if o == nil {
				o = &open{}
				leases[key] = o
				order = append(order, key)
			}
			if o.held {
				continue // duplicate grant event of a held lease
			}
			o.seg = segment{Resource: ev.Resource, Lease: ev.LeaseID, Exclusive: isExclusive(ev.Mode), Start: ev.LogTime, Index: ev.Index,
				Permits: ev.Permits}
			o.expires, o.grace, o.held = ev.ExpiresAt, ev.Grace, true
		case KindRenew, KindRevive:
			if o == nil {
				continue // renew of a lease never granted: nothing held
			}
			if o.held && ev.LogTime >= o.expires {
				// Past its expiry: only a revive in the grace window kept
				// the resource until now.
				closeAt(o, ev.LogTime)
			}
			if !o.held {
				o.seg.Start, o.seg.Index, o.held = ev.LogTime, ev.Index, true
			}
			o.expires, o.grace = ev.ExpiresAt, ev.Grace
		case KindRelease, KindExpire:
			if o != nil && o.held {
				closeAt(o, ev.LogTime)
			}
		}
	}
	for _, key := range order {
		if o := leases[key]; o.held {
			closeAt(o, o.expires+o.grace)
		}
	}
	return out
}

// checkOverlaps reports every pair of conflicting segments on one resource
// that overlap: two exclusive holders, or an exclusive and a shared one.
// Permits of one semaphore do not conflict pairwise; instead, when a
// permit's span begins, the permits live then (every active one began no
// later and ends after) must be fewer than its N.
func checkOverlaps(segs []segment, f *findings) {
	slices.SortStableFunc(segs, func(a, b segment) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Start, b.Start))
	})
	var active []segment
	resource := ""
	for _, s := range segs {
		if s.blockEnd() <= s.Start {
			continue
		}
		// Reset on the first non-empty segment of each resource (an empty
		// one skipped above must not hide the boundary).
		if s.Resource != resource {
			active, resource = active[:0], s.Resource
		}
		active = slices.DeleteFunc(active, func(a segment) bool { return a.blockEnd() <= s.Start })
		checkPermitCount(s, active, f)
		for _, a := range active {
			if !a.Exclusive && !s.Exclusive || a.Permits > 1 && s.Permits > 1 {
				continue
			}
			kind := "exclusive holders"
			if !a.Exclusive || !s.Exclusive {
				kind = "exclusive and shared holders"
			}
			if a.End <= s.Start {
				kind += " (the first in its grace window)"
			}
			f.add(Violation{
				Check: CheckFencing, Resource: s.Resource, LeaseIDs: []string{a.Lease, s.Lease}, Index: s.Index,
				Message: fmt.Sprintf("overlapping %s on %q: %s [%s, %s) and %s [%s, %s) in log time",
					kind, s.Resource, a.Lease, fmtNs(a.Start), fmtNs(a.blockEnd()), s.Lease, fmtNs(s.Start), fmtNs(s.blockEnd())),
			})
		}
		active = append(active, s)
	}
}
