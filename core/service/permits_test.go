package service

import (
	"fmt"
	"testing"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// TestPermitsErrorsClassify: goal — every front end answers bad permits
// as bad_permits (400) and a mismatch as permits_mismatch (409), not as
// the general invalid_argument or internal, and the API's bound is the
// state machine's.
func TestPermitsErrorsClassify(t *testing.T) {
	if api.MaxPermits != lock.MaxPermits {
		t.Fatalf("api.MaxPermits %d, lock.MaxPermits %d", api.MaxPermits, lock.MaxPermits)
	}
	bad := lock.DefaultConfig().Check(&lock.Command{Op: lock.OpAcquire, Resource: "r", ClientID: "c", Mode: lock.Shared,
		TTLMs: 100, LeaseID: lock.NewLeaseID(), Permits: 2})
	for _, tc := range []struct {
		err    error
		code   api.Code
		status int
	}{
		{bad, api.CodeBadPermits, 400},
		{fmt.Errorf("acquire: %w", node.ErrPermitsMismatch), api.CodePermitsMismatch, 409},
	} {
		got := Classify(tc.err)
		if got.Code != tc.code || got.Code.HTTPStatus() != tc.status || got.Code.Retryable() {
			t.Errorf("Classify(%v) = %+v (HTTP %d), want %s %d, not retryable", tc.err, got, got.Code.HTTPStatus(), tc.code, tc.status)
		}
	}
}
