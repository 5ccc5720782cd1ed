package checker

import (
	"fmt"
	"slices"
)

// checkAtomic holds every multi request (acquire_many) to its promise, on
// the committed trace: it enters its queues in one log index, on all of
// its resources; it is granted in one index, on all of them, once; and it
// leaves its queues (cancel) in one index, from all of them. Any event
// kind of a request split across indexes (or groups), or covering fewer
// resources than the request names, is a partial grant or a partial wait.
func checkAtomic(trace []TraceEvent, f *findings) {
	type kindKey struct {
		many, kind string
	}
	byRequest := make(map[kindKey][]TraceEvent)
	var order []kindKey
	for _, ev := range trace {
		if ev.Many == "" {
			continue
		}
		switch ev.Kind {
		case KindEnqueue, KindGrant, KindCancel:
		default:
			continue
		}
		k := kindKey{ev.Many, ev.Kind}
		if _, ok := byRequest[k]; !ok {
			order = append(order, k)
		}
		byRequest[k] = append(byRequest[k], ev)
	}
requests:
	for _, k := range order {
		evs := byRequest[k]
		first := evs[0]
		var resources []string
		for _, ev := range evs {
			if ev.Index != first.Index || ev.Group != first.Group {
				f.add(Violation{Check: CheckAtomic, Resource: ev.Resource, Index: ev.Index, LeaseIDs: []string{k.many},
					Message: fmt.Sprintf("multi request %s: %s on %q at index %d, on %q at index %d", k.many, k.kind,
						first.Resource, first.Index, ev.Resource, ev.Index)})
				continue requests
			}
			if slices.Contains(resources, ev.Resource) {
				f.add(Violation{Check: CheckAtomic, Resource: ev.Resource, Index: ev.Index, LeaseIDs: []string{k.many},
					Message: fmt.Sprintf("multi request %s: %s twice on %q", k.many, k.kind, ev.Resource)})
				continue requests
			}
			resources = append(resources, ev.Resource)
		}
		if len(resources) != first.ManySize {
			f.add(Violation{Check: CheckAtomic, Index: first.Index, LeaseIDs: []string{k.many},
				Message: fmt.Sprintf("multi request %s: %s on %d of its %d resources (%v) at index %d", k.many, k.kind,
					len(resources), first.ManySize, resources, first.Index)})
		}
	}
}
