package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/lockstep/lockstep/core/api"
)

var (
	// ErrNotGranted matches a *NotGrantedError: the lock was busy.
	ErrNotGranted = errors.New("lockstep: lock not granted")
	// ErrNotHolder matches an *APIError with code not_holder: the server
	// does not (or no longer) know the lease.
	ErrNotHolder = errors.New("lockstep: not the lock holder")
	// ErrLeaseExpired is why a lease is lost when its conservative validity
	// passed without a successful renewal.
	ErrLeaseExpired = errors.New("lockstep: lease validity expired")
	// ErrReleased is what Renew returns for a lease that was released.
	// A released lease's Err stays nil: release is no loss.
	ErrReleased = errors.New("lockstep: lease released")
	// ErrClosed is what every call returns once Client.Close was called.
	ErrClosed = errors.New("lockstep: client closed")
	// ErrServerSpeaksTLS matches an *APIError for a plain HTTP request
	// that reached a port serving TLS: the endpoint wants https:// and
	// Config.TLS.
	ErrServerSpeaksTLS = errors.New("lockstep: the server speaks TLS")
	// ErrDeadlock matches an *APIError with code deadlock: waiting would
	// have closed a wait-for cycle (APIError.Cycle), so the acquire was
	// refused at once and nothing was queued. Release something of the
	// cycle before asking again.
	ErrDeadlock = errors.New("lockstep: deadlock")
)

// plainHTTPToTLS is what net/http answers (400) to a plain HTTP request
// on a TLS port.
const plainHTTPToTLS = "Client sent an HTTP request to an HTTPS server"

// PlainHTTPToTLS reports whether a reply is net/http's refusal of a plain
// HTTP request on a TLS port, which says nothing of TLS to whoever reads
// it as an API error (lockctl names its flags instead).
func PlainHTTPToTLS(status int, body []byte) bool {
	return status == http.StatusBadRequest && bytes.Contains(body, []byte(plainHTTPToTLS))
}

// maxErrorMessage bounds how much of a non-JSON error body is kept.
const maxErrorMessage = 256

// NotGrantedError reports an acquire the server answered with granted=false.
type NotGrantedError struct {
	Resource string
	// QueuePosition is where the request stood when it gave up (0 for a try-lock).
	QueuePosition int
}

func (e *NotGrantedError) Error() string {
	return fmt.Sprintf("lockstep: lock %q not granted (queue position %d)", e.Resource, e.QueuePosition)
}

// Is makes errors.Is(err, ErrNotGranted) true.
func (e *NotGrantedError) Is(target error) bool { return target == ErrNotGranted }

// APIError is a non-2xx reply of the server.
type APIError struct {
	Status  int
	Code    api.Code // empty when the body was not an api.Error
	Message string
	// Cycle, on code deadlock, is the wait-for cycle by client id: this
	// client first, each waiting for the next, the last for this client.
	Cycle []string
	// speaksTLS: the reply was PlainHTTPToTLS.
	speaksTLS bool
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("lockstep: HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("lockstep: HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

// Is makes errors.Is(err, ErrNotHolder) true for code not_holder,
// errors.Is(err, ErrDeadlock) for code deadlock, and
// errors.Is(err, ErrServerSpeaksTLS) for a plain request to a TLS port.
func (e *APIError) Is(target error) bool {
	return target == ErrNotHolder && e.Code == api.CodeNotHolder || target == ErrServerSpeaksTLS && e.speaksTLS ||
		target == ErrDeadlock && e.Code == api.CodeDeadlock
}

// newAPIError decodes an error body; bodies from proxies or crashes that
// are not api.Error JSON are kept as truncated text.
func newAPIError(status int, body []byte) *APIError {
	if PlainHTTPToTLS(status, body) {
		return &APIError{Status: status, speaksTLS: true, Message: "the server speaks TLS (HTTPS), not plain HTTP: " +
			"use an https:// endpoint and Config.TLS (tlsconf.Client with the cluster's CA)"}
	}
	var wire api.Error
	if json.Unmarshal(body, &wire) == nil && wire.Code != "" {
		return &APIError{Status: status, Code: wire.Code, Message: wire.Error, Cycle: wire.Cycle}
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > maxErrorMessage {
		msg = msg[:maxErrorMessage]
	}
	return &APIError{Status: status, Message: msg}
}

// outcomeOpen tells whether a failed attempt may have been applied: an
// API error whose code says surely not applied (unavailable, overloaded)
// or definite leaves nothing open; a transport failure, a lost reply or an
// indefinite code does.
func outcomeOpen(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Code != "" {
		return apiErr.Code.Indefinite()
	}
	return true
}

// retryable tells whether another attempt may succeed: network failures,
// timeouts and undecodable replies are transient; an API error is as its
// code's class says (api.Code.Retryable: surely not applied, or outcome
// unknown, which the request id settles); a reply that is not an API error
// (a proxy's) is transient when it is a 5xx.
func retryable(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		if apiErr.Code != "" {
			return apiErr.Code.Retryable()
		}
		return apiErr.Status >= 500
	}
	return true
}
