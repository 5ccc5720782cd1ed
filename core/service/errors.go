package service

import (
	"errors"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// ErrInvalid marks a request the API refuses as it is (invalid_argument).
// It is the lock state machine's own sentinel, so a front end's decoding
// errors and the state machine's checks fall in one class.
var ErrInvalid = lock.ErrInvalid

// ErrOverloaded is Admit's refusal: no request token was free. Every front
// end answers it as api.CodeOverloaded (HTTP 503 with Retry-After, gRPC
// UNAVAILABLE).
var ErrOverloaded = errors.New("overloaded")

// errCrossShard marks an acquire_many over several shards without
// "order":"canonical".
var errCrossShard = errors.New("resources on several shards")

// Classify maps an error of the operations to the API error the caller
// gets, the same for every front end. Its code's class (api.Code.NotApplied,
// Indefinite) says truthfully whether the request took effect.
func Classify(err error) api.Error {
	var deadlock *node.DeadlockError
	if errors.As(err, &deadlock) {
		return api.Error{Code: api.CodeDeadlock, Error: err.Error(), Cycle: deadlock.Cycle}
	}
	var ended *node.LeaseEndedError
	if errors.As(err, &ended) {
		return api.Error{Code: api.CodeLeaseEnded, Error: "the lease this request was granted has since been released or has expired",
			LeaseID: ended.Lease.ID.String(), FencingToken: ended.Lease.Token}
	}
	code, msg := classifyCode(err)
	return api.Error{Code: code, Error: msg}
}

func classifyCode(err error) (api.Code, string) {
	if code, ok := authCode(err); ok {
		return code, err.Error()
	}
	switch {
	case errors.Is(err, lock.ErrBadPermits):
		return api.CodeBadPermits, err.Error()
	case errors.Is(err, node.ErrPermitsMismatch):
		return api.CodePermitsMismatch, err.Error()
	case errors.Is(err, lock.ErrBadGrace):
		return api.CodeBadGrace, err.Error()
	case errors.Is(err, ErrInvalid):
		return api.CodeInvalidArgument, err.Error()
	case errors.Is(err, ErrOverloaded):
		return api.CodeOverloaded, err.Error()
	case errors.Is(err, errCrossShard):
		return api.CodeCrossShard, err.Error()
	case errors.Is(err, node.ErrNotHolder):
		return api.CodeNotHolder, "lease is not held: it was released, expired, or never granted"
	case errors.Is(err, node.ErrRequestIDReused):
		return api.CodeRequestIDReused, "request_id was already used by this client_id for a different acquire (resource, mode, ttl, policy or permits) on this shard; nothing changed"
	case errors.Is(err, node.ErrQueueFull), errors.Is(err, node.ErrTooManyLocks), errors.Is(err, node.ErrQuotaExceeded),
		errors.Is(err, errRateLimited):
		return api.CodeResourceExhausted, err.Error()
	case errors.Is(err, node.ErrCompacted):
		return api.CodeCompacted, err.Error()
	case errors.Is(err, node.ErrTooManyWatchers):
		return api.CodeResourceExhausted, err.Error()
	case errors.Is(err, node.ErrIndeterminate):
		return api.CodeOutcomeUnknown, err.Error()
	case errors.Is(err, node.ErrUnavailable), errors.Is(err, node.ErrShutdown), errors.Is(err, node.ErrNotLeader):
		return api.CodeUnavailable, err.Error()
	default:
		return api.CodeInternal, err.Error()
	}
}

// authCode maps ACL refusals to their API codes.
func authCode(err error) (api.Code, bool) {
	switch {
	case errors.Is(err, acl.ErrUnauthenticated):
		return api.CodeUnauthenticated, true
	case errors.Is(err, acl.ErrPermissionDenied):
		return api.CodePermissionDenied, true
	case errors.Is(err, acl.ErrInvalid):
		return api.CodeInvalidArgument, true
	case errors.Is(err, acl.ErrNotFound):
		return api.CodeNotFound, true
	case errors.Is(err, acl.ErrFailedPrecondition):
		return api.CodeFailedPrecondition, true
	}
	return "", false
}
