package checker

import (
	"fmt"
	"slices"
)

// checkPermitCount judges s, a permit of a semaphore of N, against the
// segments active when it begins: with N of them permits too, N+1 leases
// were live at once on the resource. Tokens growing per grant and FIFO
// among waiters are judged for semaphores as for every lock
// (checkTraceTokens, checkFIFO), and under StrictFIFO checkQueueProgress
// demands that no permit stays free while a request waits.
func checkPermitCount(s segment, active []segment, f *findings) {
	if s.Permits <= 1 {
		return
	}
	var live []string
	for _, a := range active {
		if a.Permits > 1 {
			live = append(live, a.Lease)
		}
	}
	if len(live) < s.Permits {
		return
	}
	f.add(Violation{
		Check: CheckFencing, Resource: s.Resource, LeaseIDs: append(slices.Clone(live), s.Lease), Index: s.Index, At: s.Start,
		Message: fmt.Sprintf("semaphore %q of %d permits: %s granted at %s (index %d) while %d permits were live: %v",
			s.Resource, s.Permits, s.Lease, fmtNs(s.Start), s.Index, len(live), live),
	})
}
