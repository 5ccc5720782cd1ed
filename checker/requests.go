package checker

import (
	"fmt"
	"strings"

	"github.com/lockstep/lockstep/models"
)

// CheckRequestIDs names the request-id check.
const CheckRequestIDs = "request-ids"

// checkRequestIDs judges request_id_reused answers, which the lock model
// sets aside (they change nothing): one is only right when the same
// (client, request id) was used, by an operation called before the answer
// returned, for a different request (resource, mode, ttl or policy). The
// model itself checks that a request id is never granted twice.
func checkRequestIDs(h *History, f *findings) {
	type body struct {
		resource, mode, policy string
		ttl                    int64
	}
	uses := make(map[[2]string][]Op)
	for _, op := range h.Ops {
		if (op.Input.Op == models.Acquire || op.Input.Op == models.AcquireMany) && op.Input.RequestID != "" {
			k := [2]string{op.Input.ClientID, op.Input.RequestID}
			uses[k] = append(uses[k], op)
		}
	}
	of := func(in models.LockInput) body {
		mode := in.Mode
		if mode == "" {
			mode = models.Exclusive
		}
		policy := in.Policy
		if policy == "" {
			policy = "fifo"
		}
		// An acquire_many is another request than any single acquire.
		resource := in.Resource
		if in.Op == models.AcquireMany {
			resource = "many:" + strings.Join(in.Resources, "\x00")
		}
		return body{resource, mode, policy, in.TTL}
	}
	for k, ops := range uses {
		for _, op := range ops {
			if op.Output.Unknown || op.Output.Code != models.CodeRequestIDReused {
				continue
			}
			justified := false
			for _, other := range ops {
				if of(other.Input) != of(op.Input) && other.Call <= op.Return {
					justified = true
					break
				}
			}
			if !justified {
				f.add(Violation{Check: CheckRequestIDs, Resource: op.Input.Resource, At: op.Return,
					Message: fmt.Sprintf("client %s request %q answered request_id_reused, but no other request used that id", k[0], k[1])})
			}
		}
	}
}
