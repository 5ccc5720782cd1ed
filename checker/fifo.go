package checker

import "fmt"

// checkFIFO counts queue inversions (waiters overtaken by a later waiter or
// by a fresh request) and the longest wait. Inversions are violations only
// under StrictFIFO, because the throughput policy allows them by design.
func checkFIFO(r queueReplay, opts Options, f *findings, stats *Stats) {
	for _, g := range r.Grants {
		if g.Queued {
			stats.QueuedGrants++
		}
		if g.Skipped == 0 {
			continue
		}
		stats.Inversions += g.Skipped
		if !opts.StrictFIFO {
			continue
		}
		who := "fresh request"
		if g.Queued {
			who = "waiter"
		}
		ev := g.Event
		f.add(Violation{
			Check: CheckFIFO, Resource: ev.Resource, LeaseIDs: []string{ev.LeaseID}, Index: ev.Index,
			Message: fmt.Sprintf("%s %s (%s) granted %q at index %d ahead of %d earlier waiter(s)",
				who, ev.LeaseID, ev.Client, ev.Resource, ev.Index, g.Skipped),
		})
	}
	for _, w := range r.Waiters {
		if w.Outcome == wasGranted {
			stats.MaxWaitNs = max(stats.MaxWaitNs, w.EndTime-w.EnqTime)
		}
	}
}
