package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// decode reads exactly one JSON object with no unknown fields.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("%w: body larger than %d bytes", lock.ErrInvalid, tooBig.Limit)
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: empty body, want a JSON object", lock.ErrInvalid)
		}
		return fmt.Errorf("%w: malformed JSON: %v", lock.ErrInvalid, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("%w: body larger than %d bytes", lock.ErrInvalid, tooBig.Limit)
		}
		return fmt.Errorf("%w: trailing data after the JSON object", lock.ErrInvalid)
	}
	return nil
}

// classify maps an error to the API error the caller gets.
func classify(err error) api.Error {
	var ended *node.LeaseEndedError
	if errors.As(err, &ended) {
		return api.Error{Code: api.CodeLeaseEnded, Error: "the lease this request was granted has since been released or has expired",
			LeaseID: ended.Lease.ID.String(), FencingToken: ended.Lease.Token}
	}
	code, msg := classifyCode(err)
	return api.Error{Code: code, Error: msg}
}

func classifyCode(err error) (api.Code, string) {
	switch {
	case errors.Is(err, lock.ErrInvalid):
		return api.CodeInvalidArgument, err.Error()
	case errors.Is(err, node.ErrNotHolder):
		return api.CodeNotHolder, "lease is not held: it was released, expired, or never granted"
	case errors.Is(err, node.ErrRequestIDReused):
		return api.CodeRequestIDReused, "request_id was already used by this client_id for a different acquire (resource, mode, ttl or policy); nothing changed"
	case errors.Is(err, node.ErrQueueFull), errors.Is(err, node.ErrTooManyLocks):
		return api.CodeResourceExhausted, err.Error()
	case errors.Is(err, node.ErrIndeterminate):
		return api.CodeOutcomeUnknown, err.Error()
	case errors.Is(err, node.ErrUnavailable), errors.Is(err, node.ErrShutdown), errors.Is(err, node.ErrNotLeader):
		return api.CodeUnavailable, err.Error()
	default:
		return api.CodeInternal, err.Error()
	}
}

func writeError(w http.ResponseWriter, code api.Code, msg string) {
	writeAPIError(w, api.Error{Error: msg, Code: code})
}

func writeAPIError(w http.ResponseWriter, e api.Error) {
	writeJSON(w, e.Code.HTTPStatus(), e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
