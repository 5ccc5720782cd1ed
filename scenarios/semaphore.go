package scenarios

import (
	"regexp"
	"strconv"

	"github.com/lockstep/lockstep/core/api"
)

// resourceNumber reads i back from a resource name of resourceName.
var resourceNumber = regexp.MustCompile(`r(\d+)$`)

// permitsOf is the N of resource's semaphore under Workload.Permits, 0
// when the workload has no semaphores: resource i (1-based) has
// Permits[0] + (i-1) mod (Permits[1]-Permits[0]+1).
func (wl *workload) permitsOf(resource string) int {
	lo, hi := wl.w.Permits[0], wl.w.Permits[1]
	if lo <= 1 {
		return 0
	}
	m := resourceNumber.FindStringSubmatch(resource)
	if m == nil {
		return 0
	}
	i, _ := strconv.Atoi(m[1])
	return lo + (i-1)%(max(hi, lo)-lo+1)
}

// fenced reports whether a holder of resource in mode writes to the
// fenced store. The store models a downstream that admits one writer
// (the highest token), which a semaphore's N concurrent holders are not:
// their safety is judged by counting live permits (checker.checkPermitCount)
// and by the lock model instead.
func (wl *workload) fenced(resource string, mode api.Mode) bool {
	return mode == api.Exclusive && wl.permitsOf(resource) <= 1
}
