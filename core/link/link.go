// Package link carries requests between the members of a lockstep cluster.
// A request names its kind (a Raft RPC, a command forwarded to a group's
// leader, a read-index query) and the Raft group it is for, and gets one
// reply. Every group's traffic from one member to another shares one
// connection (TCP in this package), written in batches: a member with many
// groups pays for one connection, one reader and one write per batch of
// messages, not per group.
//
// Link is the seam: core/raftlink runs Raft's RPCs over it and
// core/forward a group's forwarded commands; TCP implements it for lockd,
// the simulator's network for the testbed.
package link

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Kind says what a request carries, and so which handler serves it.
type Kind uint8

const (
	// KindRaft is one Raft RPC (core/raftlink).
	KindRaft Kind = iota + 1
	// KindForward is a command a member forwards to its group's leader
	// (core/forward).
	KindForward
	// KindReadIndex asks a group's leader for its read index (core/forward).
	KindReadIndex
	// kindCount bounds the kinds.
	kindCount
)

func (k Kind) String() string {
	switch k {
	case KindRaft:
		return "raft"
	case KindForward:
		return "forward"
	case KindReadIndex:
		return "read_index"
	default:
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
}

// Request is one message to a member.
type Request struct {
	Kind  Kind
	Group uint64
	Body  []byte
	// Stream, when set, follows Body: StreamSize bytes (a Raft snapshot).
	// The handler reads them from its own Request's Stream, before it
	// returns.
	Stream     io.Reader
	StreamSize int64
}

// Handler answers one request; its error reaches the caller as a
// RemoteError. It runs on its own goroutine and must honour ctx, which ends
// when the connection it came on closes.
type Handler func(ctx context.Context, req Request) ([]byte, error)

// Link sends requests to members and serves theirs.
type Link interface {
	// Call sends req to the member listening at addr and waits for its
	// reply, until ctx ends. An error wrapping ErrNotSent means the request
	// surely did not reach the member; a RemoteError is the handler's own;
	// anything else leaves the outcome unknown.
	Call(ctx context.Context, addr string, req Request) ([]byte, error)
	// Handle serves the requests of kind with h (one handler per kind,
	// set before traffic of that kind arrives; it dispatches by group).
	Handle(kind Kind, h Handler)
}

var (
	// ErrNotSent marks a request that surely did not reach its member.
	ErrNotSent = errors.New("link: request not sent")
	// ErrClosed is returned once the link is closed.
	ErrClosed = errors.New("link: closed")
	// ErrConnLost marks a request whose connection broke before its reply
	// came: it may or may not have been served.
	ErrConnLost = errors.New("link: connection lost before the reply")
)

// RemoteError is a handler's error, carried back as text.
type RemoteError struct{ Message string }

func (e *RemoteError) Error() string { return e.Message }

// noHandler is the reply to a kind nobody serves.
func noHandler(k Kind) error { return fmt.Errorf("link: no handler for %v requests", k) }
