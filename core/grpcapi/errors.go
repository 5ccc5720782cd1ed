package grpcapi

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/service"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of lockstep's errors.
const ErrorDomain = "lockstep.dev"

// Code maps an API error code to the gRPC status code a call ends with.
// outcome_unknown is DEADLINE_EXCEEDED, the one gRPC code documented as
// "the operation may have completed" (HTTP answers 504 for it too);
// UNAVAILABLE keeps its gRPC meaning, surely not applied and safe to retry
// (overloaded too: refused before anything happened, and another member
// may serve it, which RESOURCE_EXHAUSTED would not suggest).
func Code(c api.Code) codes.Code {
	switch c {
	case api.CodeInvalidArgument, api.CodeCrossShard, api.CodeBadPermits, api.CodeBadGrace:
		return codes.InvalidArgument
	case api.CodeCompacted:
		return codes.OutOfRange
	case api.CodeNotHolder, api.CodeLeaseEnded, api.CodeFailedPrecondition, api.CodePermitsMismatch:
		return codes.FailedPrecondition
	case api.CodeRequestIDReused:
		return codes.AlreadyExists
	case api.CodeDeadlock:
		// ABORTED: "typically due to a concurrency issue", gRPC's own
		// example being a transaction abort; retrying as is gets it again.
		return codes.Aborted
	case api.CodeResourceExhausted:
		return codes.ResourceExhausted
	case api.CodeUnavailable, api.CodeOverloaded:
		return codes.Unavailable
	case api.CodeOutcomeUnknown:
		return codes.DeadlineExceeded
	case api.CodeNotFound:
		return codes.NotFound
	case api.CodeMethodNotAllowed:
		return codes.Unimplemented
	case api.CodeUnauthenticated:
		return codes.Unauthenticated
	case api.CodePermissionDenied:
		return codes.PermissionDenied
	}
	return codes.Internal
}

// toStatus turns an operation's error into the status the call ends with:
// the gRPC code of its API code, and the API error in an ErrorInfo.
func toStatus(err error) error {
	ae := service.Classify(err)
	code := Code(ae.Code)
	if ae.Code == api.CodeInternal {
		// The caller left or its deadline passed before anything was
		// decided for it: say so rather than blame the server.
		switch {
		case errors.Is(err, context.Canceled):
			return status.Error(codes.Canceled, err.Error())
		case errors.Is(err, context.DeadlineExceeded):
			return status.Error(codes.DeadlineExceeded, err.Error())
		}
	}
	info := &errdetails.ErrorInfo{Reason: string(ae.Code), Domain: ErrorDomain}
	if ae.LeaseID != "" {
		info.Metadata = map[string]string{"lease_id": ae.LeaseID, "fencing_token": strconv.FormatUint(ae.FencingToken, 10)}
	}
	if len(ae.Cycle) > 0 {
		// A JSON list: client ids may hold any character but a
		// separator-joined list could not be read back.
		cycle, _ := json.Marshal(ae.Cycle)
		info.Metadata = map[string]string{"cycle": string(cycle)}
	}
	st, derr := status.New(code, ae.Error).WithDetails(info)
	if derr != nil {
		return status.Error(code, ae.Error)
	}
	return st.Err()
}

// APIError reads the API error a lockstep gRPC call ended with: the code
// from its ErrorInfo, else (not a lockstep error) the gRPC code's name.
// Clients and tests compare it with what HTTP answered.
func APIError(err error) api.Error {
	st := status.Convert(err)
	out := api.Error{Error: st.Message(), Code: api.Code(st.Code().String())}
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != ErrorDomain {
			continue
		}
		out.Code = api.Code(info.GetReason())
		out.LeaseID = info.GetMetadata()["lease_id"]
		out.FencingToken, _ = strconv.ParseUint(info.GetMetadata()["fencing_token"], 10, 64)
		if cycle := info.GetMetadata()["cycle"]; cycle != "" {
			_ = json.Unmarshal([]byte(cycle), &out.Cycle)
		}
	}
	return out
}
