package grpcapi

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/service"
)

// Goal: every error an operation can return reaches a gRPC client as the
// same API code HTTP would send, under a gRPC code with the matching
// meaning (retry-safe UNAVAILABLE vs maybe-applied DEADLINE_EXCEEDED), and
// a lease_ended error names its lease, a deadlock its cycle. Method: map each node error through
// toStatus and read it back with APIError.
func TestErrorsCarryTheAPICode(t *testing.T) {
	ended := &node.LeaseEndedError{Lease: lock.Lease{ID: lock.LeaseID{1}, Token: 9}}
	deadlock := &node.DeadlockError{Cycle: []string{"b,1", "a"}}
	cases := []struct {
		err  error
		code api.Code
		grpc codes.Code
	}{
		{fmt.Errorf("%w: ttl", lock.ErrInvalid), api.CodeInvalidArgument, codes.InvalidArgument},
		{node.ErrNotHolder, api.CodeNotHolder, codes.FailedPrecondition},
		{node.ErrRequestIDReused, api.CodeRequestIDReused, codes.AlreadyExists},
		{ended, api.CodeLeaseEnded, codes.FailedPrecondition},
		{node.ErrQueueFull, api.CodeResourceExhausted, codes.ResourceExhausted},
		{node.ErrUnavailable, api.CodeUnavailable, codes.Unavailable},
		{fmt.Errorf("%w: 1 at once", service.ErrOverloaded), api.CodeOverloaded, codes.Unavailable},
		{node.ErrIndeterminate, api.CodeOutcomeUnknown, codes.DeadlineExceeded},
		{fmt.Errorf("%w: token x", acl.ErrNotFound), api.CodeNotFound, codes.NotFound},
		{fmt.Errorf("%w: last admin", acl.ErrFailedPrecondition), api.CodeFailedPrecondition, codes.FailedPrecondition},
		{errors.New("boom"), api.CodeInternal, codes.Internal},
		{deadlock, api.CodeDeadlock, codes.Aborted},
	}
	for _, tc := range cases {
		err := toStatus(tc.err)
		got := APIError(err)
		if status.Code(err) != tc.grpc || got.Code != tc.code {
			t.Errorf("%v: gRPC %v code %q, want %v %q", tc.err, status.Code(err), got.Code, tc.grpc, tc.code)
		}
	}
	if got := APIError(toStatus(ended)); got.LeaseID != ended.Lease.ID.String() || got.FencingToken != 9 {
		t.Errorf("lease_ended names lease %q token %d", got.LeaseID, got.FencingToken)
	}
	if got := APIError(toStatus(deadlock)); !slices.Equal(got.Cycle, deadlock.Cycle) {
		t.Errorf("deadlock names cycle %q, want %q", got.Cycle, deadlock.Cycle)
	}
}
