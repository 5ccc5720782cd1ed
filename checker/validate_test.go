package checker

import (
	"testing"

	"github.com/lockstep/lockstep/models"
)

// TestValidateAfterTheLeaseEnded: goal — a "valid" answer for a token
// whose lease a definite release or not_holder had ended before the
// validate was called is flagged, even where the model lets it pass as a
// possible phantom's token; a validate concurrent with the end, or one
// answering not valid, is not. Method: one grant, its end each way, and
// validates placed before, across and after it.
func TestValidateAfterTheLeaseEnded(t *testing.T) {
	grant := Op{ClientID: 0, Call: 0, Return: 10, Input: models.LockInput{Op: models.Acquire, Resource: "r", ClientID: "c", TTLNs: 5e9},
		Output: models.LockOutput{Granted: true, LeaseID: "L", Token: 7, LogTimeNs: 5}}
	release := Op{ClientID: 0, Call: 20, Return: 30, Input: models.LockInput{Op: models.Release, Resource: "r", LeaseID: "L"},
		Output: models.LockOutput{LogTimeNs: 25}}
	renewRefused := Op{ClientID: 0, Call: 20, Return: 30, Input: models.LockInput{Op: models.Renew, Resource: "r", LeaseID: "L"},
		Output: models.LockOutput{Code: models.CodeNotHolder, LogTimeNs: 25}}
	validate := func(call, ret int64, resource string, token uint64, valid bool) Op {
		return Op{ClientID: 1, Call: call, Return: ret, Input: models.LockInput{Op: models.Validate, Resource: resource, Token: token},
			Output: models.LockOutput{LogTimeNs: call, Valid: valid}}
	}
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"valid while held", []Op{grant, validate(12, 15, "r", 7, true), release}, 0},
		{"valid across the release", []Op{grant, release, validate(25, 35, "r", 7, true)}, 0},
		{"not valid after the release", []Op{grant, release, validate(40, 45, "r", 7, false)}, 0},
		{"valid after the release", []Op{grant, release, validate(40, 45, "r", 7, true)}, 1},
		{"valid after a not_holder", []Op{grant, renewRefused, validate(40, 45, "r", 7, true)}, 1},
		{"valid for another resource's token 7", []Op{grant, release, validate(40, 45, "s", 7, true)}, 0},
	} {
		var f findings
		checkValidate(&History{Ops: tc.ops}, &f)
		if len(f.list) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(f.list), f.list, tc.want)
		}
	}
}
