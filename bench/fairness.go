package bench

import (
	"cmp"
	"slices"
)

// JainIndex is Jain's fairness index (Σx)² / (n·Σx²) over per-client shares:
// 1 when every client got the same, 1/n when one client got everything.
// It is 0 for no clients or when nobody got anything.
func JainIndex(shares []int64) float64 {
	var sum, sumSq float64
	for _, x := range shares {
		f := float64(x)
		sum += f
		sumSq += f * f
	}
	if len(shares) == 0 || sumSq == 0 {
		return 0
	}
	return sum * sum / (float64(len(shares)) * sumSq)
}

// GrantEvent is one granted acquire on a key, timed on the bench's shared
// monotonic clock: when the request was sent and when the grant arrived.
type GrantEvent struct {
	RequestNs int64
	GrantNs   int64
}

// Inversions summarises FIFO order violations among grants of one key.
type Inversions struct {
	// Pairs where a was requested more than the slack before b, yet b was
	// granted strictly before a.
	Pairs int64
	// Overtakers counts grants that overtook at least one such earlier
	// request: the share of grants served out of FIFO order.
	Overtakers int64
}

// CountInversions counts FIFO inversions among grants of one key. The slack
// discounts pairs whose send order the server may not have seen (two
// requests leaving the clients within the scheduling jitter can arrive
// either way round); slackNs = 0 counts every strict pair. Pairs whose
// waits do not overlap never count, so an uncontended key has none. It
// sorts events in place; O(n log n).
func CountInversions(events []GrantEvent, slackNs int64) Inversions {
	if len(events) < 2 {
		return Inversions{}
	}
	slices.SortFunc(events, func(a, b GrantEvent) int { return cmp.Compare(a.RequestNs, b.RequestNs) })
	grants := make([]int64, len(events))
	for i, e := range events {
		grants[i] = e.GrantNs
	}
	slices.Sort(grants)
	// Fenwick tree over grant ranks of the events requested early enough
	// to count against the current one.
	tree := make([]int64, len(events)+1)
	add := func(i int) {
		for ; i < len(tree); i += i & -i {
			tree[i]++
		}
	}
	prefix := func(i int) (n int64) {
		for ; i > 0; i -= i & -i {
			n += tree[i]
		}
		return n
	}
	var inv Inversions
	var added int64
	early := 0
	for _, b := range events {
		for ; events[early].RequestNs < b.RequestNs-slackNs; early++ {
			lo, _ := slices.BinarySearch(grants, events[early].GrantNs)
			add(lo + 1)
			added++
		}
		// Of the early events, those granted after b are inversions.
		atOrBefore, _ := slices.BinarySearch(grants, b.GrantNs+1)
		if overtaken := added - prefix(atOrBefore); overtaken > 0 {
			inv.Pairs += overtaken
			inv.Overtakers++
		}
	}
	return inv
}
