package checker

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// checkHerd compares, per log entry and resource, how many blocked callers
// were woken with how many queued waiters that entry resolved (granted, or
// cancelled: a waiter is woken to learn either). The server reports one
// wakeup per event, so reports are summed per entry first. Waking more is
// a thundering herd (all retry, all but a few fail); waking fewer is not
// judged, since a waiter's node may have crashed and taken its caller along.
func checkHerd(h *History, r queueReplay, opts Options, f *findings, stats *Stats) {
	type key struct {
		resource string
		index    uint64
	}
	resolved := make(map[key]int)
	for _, g := range r.Grants {
		if g.Queued {
			resolved[key{g.Event.Resource, g.Event.Index}]++
		}
	}
	for _, w := range r.Waiters {
		if w.Outcome == wasCancelled {
			resolved[key{w.Resource, w.EndIndex}]++
		}
	}
	woken := make(map[key]int)
	for _, w := range h.Wakeups {
		woken[key{w.Resource, w.Index}] += w.Waiters
	}
	keys := slices.SortedFunc(maps.Keys(woken), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(a.resource, b.resource))
	})
	for _, k := range keys {
		excess := woken[k] - resolved[k]
		if excess <= 0 {
			continue
		}
		stats.HerdExcess += excess
		if opts.AllowHerd {
			continue
		}
		f.add(Violation{
			Check: CheckHerd, Resource: k.resource, Index: k.index,
			Message: fmt.Sprintf("index %d on %q woke %d caller(s) but resolved only %d waiter(s)", k.index, k.resource, woken[k], resolved[k]),
		})
	}
}
