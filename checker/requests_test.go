package checker

import (
	"testing"

	"github.com/lockstep/lockstep/models"
)

// TestRequestIDReusedNeedsAnotherRequest: goal — a request_id_reused answer
// is flagged unless that request id was really used for another request.
// Method: the same answer with and without an earlier acquire for another
// resource under the same (client, request id).
func TestRequestIDReusedNeedsAnotherRequest(t *testing.T) {
	reused := Op{ClientID: 1, Call: 10, Return: 20,
		Input:  models.LockInput{Op: models.Acquire, Resource: "y", ClientID: "c", RequestID: "q", TTL: 5},
		Output: models.LockOutput{Code: models.CodeRequestIDReused}}
	first := Op{ClientID: 0, Call: 0, Return: 5,
		Input:  models.LockInput{Op: models.Acquire, Resource: "x", ClientID: "c", RequestID: "q", TTL: 5},
		Output: models.LockOutput{LogTime: 1}}
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"justified", []Op{first, reused}, 0},
		{"unjustified", []Op{reused}, 1},
	} {
		var f findings
		checkRequestIDs(&History{Ops: tc.ops}, &f)
		if len(f.list) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(f.list), f.list, tc.want)
		}
	}
}
