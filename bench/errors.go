package bench

import (
	"context"
	"errors"
)

// Error classes a Locker wraps its failures in, so results can count errors
// by kind across very different services.
var (
	// ErrUnavailable: the service said 503 / had no leader, after retries.
	ErrUnavailable = errors.New("unavailable")
	// ErrNotHolder: release of a lease the service no longer has.
	ErrNotHolder = errors.New("not holder")
	// ErrRejected: the service refused the request as invalid (4xx).
	ErrRejected = errors.New("rejected")
	// ErrServer: the service failed internally (5xx other than 503).
	ErrServer = errors.New("server error")
	// ErrTransport: no answer at all (connection refused/reset, bad body).
	ErrTransport = errors.New("transport")
)

// ErrorKind names the class of err for the results' error table.
func ErrorKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ErrNotHolder):
		return "not_holder"
	case errors.Is(err, ErrRejected):
		return "rejected"
	case errors.Is(err, ErrServer):
		return "server"
	case errors.Is(err, ErrTransport):
		return "transport"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(err, context.Canceled):
		return "canceled"
	default:
		return "other"
	}
}
