package checker

import (
	"fmt"

	"github.com/lockstep/lockstep/models"
)

// CheckAccounted names the check that every committed grant reached the
// client it was made for, or might have.
const CheckAccounted = "accounted"

// checkAccounted holds the committed grants against what clients were
// told: a grant of lease L to client c on resource r must show up in an
// answer to c (granted L, or lease_ended naming L), unless an acquire of
// c on r has an unknown outcome (that one may have been it). A grant made
// while the only acquires of its client were answered "not granted" is a
// lock nobody was told of: the server lost track of how a request ended.
// A history without client operations (a trace on its own) has nothing to
// hold the grants against.
func checkAccounted(h *History, trace []TraceEvent, f *findings) {
	if len(h.Ops) == 0 {
		return
	}
	reported := make(map[string]bool)
	type cr struct{ client, resource string }
	pending := make(map[cr]bool)
	for _, op := range h.Ops {
		if op.Input.Op != models.Acquire && op.Input.Op != models.AcquireMany {
			continue
		}
		if op.Output.Unknown {
			pending[cr{op.Input.ClientID, op.Input.Resource}] = true
			// An acquire_many in doubt may be any grant on its resources.
			for _, r := range op.Input.Resources {
				pending[cr{op.Input.ClientID, r}] = true
			}
			continue
		}
		if op.Output.LeaseID != "" {
			reported[op.Output.LeaseID] = true
		}
		for _, l := range op.Output.Leases {
			reported[l.LeaseID] = true
		}
	}
	for _, ev := range trace {
		if ev.Kind != KindGrant || reported[ev.LeaseID] || pending[cr{ev.Client, ev.Resource}] {
			continue
		}
		f.add(Violation{Check: CheckAccounted, Resource: ev.Resource, LeaseIDs: []string{ev.LeaseID}, Index: ev.Index,
			Message: fmt.Sprintf("grant of %s to %s on %q at index %d was never reported to it, and none of its acquires there is in doubt",
				ev.LeaseID, ev.Client, ev.Resource, ev.Index)})
		reported[ev.LeaseID] = true
	}
}
