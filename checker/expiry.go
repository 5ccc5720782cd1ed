package checker

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// checkExpiry judges when leases were freed, on the applied entries of
// each group (History.Entries):
//   - exactly: every entry expires what is due before it applies, so a
//     lease not released earlier must be freed by the first entry whose log
//     time reaches its expiry, never later;
//   - promptly: that first entry must come within ExpiryBound of the expiry
//     (the leader ticks when a lease falls due), judged only where no fault
//     window (plus RecoveryBound) overlaps the wait, since a cluster without
//     a leader applies nothing.
//
// A lease with a grace window is due, and must be freed, at its expiry
// plus the window (an expire before that is a violation too), unless a
// renew in the window revived it.
//
// Together they cover a lock that sits idle with a crashed holder next to
// locks renewed steadily: only the leader's tick frees the idle one.
func checkExpiry(h *History, trace []TraceEvent, opts Options, f *findings) (judged int) {
	entries := make(map[int][]Entry)
	for _, e := range h.Entries {
		entries[e.Group] = append(entries[e.Group], e)
	}
	for g := range entries {
		slices.SortFunc(entries[g], func(a, b Entry) int { return int(a.Index) - int(b.Index) })
	}
	groupOf := make(map[string]int)
	for _, ev := range trace {
		groupOf[ev.Resource] = ev.Group
	}
	quiet := func(from, to int64) bool {
		for _, ft := range h.Faults {
			if ft.Start <= to && ft.End+int64(opts.RecoveryBound) >= from {
				return false
			}
		}
		return true
	}
	for _, l := range leaseLives(trace) {
		es := entries[groupOf[l.resource]]
		// Entries are in index order and log time never goes back, so the
		// first entry at or past the expiry is found by search.
		i := sort.Search(len(es), func(i int) bool { return es[i].LogTime >= l.expires })
		if i == len(es) {
			continue // the run ended first
		}
		first := es[i]
		judged++
		if l.grace > 0 && l.expired && l.freedAt < l.expires {
			f.add(Violation{Check: CheckExpiry, Resource: l.resource, LeaseIDs: []string{l.lease}, Index: l.freedIndex,
				Message: fmt.Sprintf("lease %s on %q expired at %s, before its grace window ended at %s",
					l.lease, l.resource, fmtNs(l.freedAt), fmtNs(l.expires))})
			continue
		}
		if !l.freed || l.freedIndex > first.Index {
			f.add(Violation{Check: CheckExpiry, Resource: l.resource, LeaseIDs: []string{l.lease}, Index: first.Index,
				Message: fmt.Sprintf("lease %s on %q expiring at %s is still held after index %d (log time %s)",
					l.lease, l.resource, fmtNs(l.expires), first.Index, fmtNs(first.LogTime))})
			continue
		}
		if opts.ExpiryBound <= 0 || i == 0 || (l.freed && l.freedIndex < first.Index) {
			continue // no bound asked, nothing before it, or released first
		}
		prev := es[i-1]
		late := first.LogTime - l.expires
		if late > int64(opts.ExpiryBound) && quiet(prev.At, first.At) {
			f.add(Violation{Check: CheckExpiry, Resource: l.resource, LeaseIDs: []string{l.lease}, Index: first.Index,
				Message: fmt.Sprintf("lease %s on %q expiring at %s was freed %s late, at index %d, with no fault (bound %s)",
					l.lease, l.resource, fmtNs(l.expires), fmtNs(late), first.Index, time.Duration(opts.ExpiryBound))})
		}
	}
	return judged
}
