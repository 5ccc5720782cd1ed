package service

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// TestClassifyEveryErrorPath: goal — every error a node returns maps to the
// API code that says truthfully whether the request took effect: surely not
// (unavailable, 503), maybe (outcome_unknown, 504), or a definite answer.
// Method: one row per node error, wrapped as the node wraps it.
func TestClassifyEveryErrorPath(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("propose: %w", err) }
	for _, tc := range []struct {
		name string
		err  error
		code api.Code
		http int
	}{
		{"invalid input", wrap(lock.ErrInvalid), api.CodeInvalidArgument, 400},
		{"not the holder", wrap(node.ErrNotHolder), api.CodeNotHolder, 409},
		{"request id reused", wrap(node.ErrRequestIDReused), api.CodeRequestIDReused, 409},
		{"lease ended", &node.LeaseEndedError{Lease: lock.Lease{Token: 7}}, api.CodeLeaseEnded, 409},
		{"queue full", wrap(node.ErrQueueFull), api.CodeResourceExhausted, 429},
		{"too many locks", wrap(node.ErrTooManyLocks), api.CodeResourceExhausted, 429},
		{"no leader in time", fmt.Errorf("%w: %w", node.ErrUnavailable, context.DeadlineExceeded), api.CodeUnavailable, 503},
		{"refused by a non-leader", wrap(node.ErrNotLeader), api.CodeUnavailable, 503},
		{"shutting down before proposing", wrap(node.ErrShutdown), api.CodeUnavailable, 503},
		{"leadership lost after proposing", fmt.Errorf("%w: leadership lost", node.ErrIndeterminate), api.CodeOutcomeUnknown, 504},
		{"shut down while queued", fmt.Errorf("%w: %w while the request waited", node.ErrIndeterminate, node.ErrShutdown), api.CodeOutcomeUnknown, 504},
		{"over --max-in-flight", fmt.Errorf("%w: 1 request at once", ErrOverloaded), api.CodeOverloaded, 503},
		{"anything else", errors.New("boom"), api.CodeInternal, 500},
	} {
		got := Classify(tc.err)
		if got.Code != tc.code || got.Code.HTTPStatus() != tc.http || got.Error == "" {
			t.Errorf("%s: %+v (HTTP %d), want %s (HTTP %d)", tc.name, got, got.Code.HTTPStatus(), tc.code, tc.http)
		}
	}
	if got := Classify(&node.LeaseEndedError{Lease: lock.Lease{ID: lock.LeaseID{1}, Token: 7}}); got.FencingToken != 7 || got.LeaseID == "" {
		t.Errorf("lease_ended lacks the ended lease: %+v", got)
	}
}
