package maelstrom

import (
	"encoding/json"
	"fmt"
)

// Error codes of doc/protocol.md. Every code is definite (the operation did
// not and never will happen) except Timeout and Crash; custom codes (1000
// and up) are indefinite too, since Maelstrom cannot know what they mean.
const (
	Timeout                = 0
	NodeNotFound           = 1
	NotSupported           = 10
	TemporarilyUnavailable = 11
	MalformedRequest       = 12
	Crash                  = 13
	Abort                  = 14
	KeyDoesNotExist        = 20
	KeyAlreadyExists       = 21
	PreconditionFailed     = 22
	TxnConflict            = 30
)

// Definite reports whether an error with this code means the operation
// certainly did not take effect.
func Definite(code int) bool {
	switch code {
	case NodeNotFound, NotSupported, TemporarilyUnavailable, MalformedRequest, Abort,
		KeyDoesNotExist, KeyAlreadyExists, PreconditionFailed, TxnConflict:
		return true
	}
	return false
}

// CodeName is the protocol's name of a code ("timeout", "crash", ...).
func CodeName(code int) string {
	switch code {
	case Timeout:
		return "timeout"
	case NodeNotFound:
		return "node-not-found"
	case NotSupported:
		return "not-supported"
	case TemporarilyUnavailable:
		return "temporarily-unavailable"
	case MalformedRequest:
		return "malformed-request"
	case Crash:
		return "crash"
	case Abort:
		return "abort"
	case KeyDoesNotExist:
		return "key-does-not-exist"
	case KeyAlreadyExists:
		return "key-already-exists"
	case PreconditionFailed:
		return "precondition-failed"
	case TxnConflict:
		return "txn-conflict"
	}
	return fmt.Sprintf("error-%d", code)
}

// Error is an error reply. A handler returning one has it sent as is; any
// other error a handler returns goes out as Crash, which is indefinite and
// so always safe.
type Error struct {
	Code int
	Text string
	// Extra holds additional body keys to send (protocol.md allows them;
	// the lock workload puts log_time_ns on not-holder errors).
	Extra map[string]any
	// Body is the raw body of a received error, nil on errors we create.
	Body json.RawMessage
}

// NewError returns an *Error with code and text.
func NewError(code int, text string) *Error { return &Error{Code: code, Text: text} }

func (e *Error) Error() string {
	return fmt.Sprintf("maelstrom error %d (%s): %s", e.Code, CodeName(e.Code), e.Text)
}

// Definite reports whether the operation certainly did not happen.
func (e *Error) Definite() bool { return Definite(e.Code) }

// body is the wire form of e, with Extra merged in.
func (e *Error) body() any {
	if len(e.Extra) == 0 {
		return ErrorBody{Type: "error", Code: e.Code, Text: e.Text}
	}
	m := make(map[string]any, len(e.Extra)+3)
	for k, v := range e.Extra {
		m[k] = v
	}
	m["type"], m["code"] = "error", e.Code
	if e.Text != "" {
		m["text"] = e.Text
	}
	return m
}
