package maelstrom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/lockstep/lockstep/core/link"
)

// LinkType is the message type that carries one core/link request between
// nodes; the reply is LinkOKType with the same in_reply_to, or an error.
const (
	LinkType   = "link"
	LinkOKType = "link_ok"
)

// linkRequest is the body of a link message. []byte fields travel as
// base64; Stream is the request's stream, read whole.
type linkRequest struct {
	Type   string    `json:"type"`
	Kind   link.Kind `json:"kind"`
	Group  uint64    `json:"group"`
	Body   []byte    `json:"body"`
	Stream []byte    `json:"stream,omitempty"`
}

type linkReply struct {
	Type string `json:"type"`
	Body []byte `json:"body"`
}

// linkEnvelope bounds what a link message adds to its base64 payload:
// src, dest, type, kind, group, msg_id and the JSON around them.
const linkEnvelope = 1 << 10

// Link is a core/link.Link over Maelstrom messages, so that core/raftlink
// runs Raft over Maelstrom's network, with its latency and partitions. A
// message Maelstrom drops is noticed only when the caller's ctx ends, as a
// silent TCP peer would be.
type Link struct {
	node *Node

	mu       sync.Mutex
	handlers map[link.Kind]link.Handler
}

var _ link.Link = (*Link)(nil)

// NewLink registers the link's message handler on n; call it before Run.
func NewLink(n *Node) *Link {
	l := &Link{node: n, handlers: make(map[link.Kind]link.Handler)}
	n.Handle(LinkType, l.serve)
	return l
}

// maxPayload is the most body and stream bytes one message may carry: the
// receiver's line limit (every node runs with the same Options) less the
// envelope, before base64's 4/3.
func (l *Link) maxPayload() int64 {
	return int64(l.node.opts.MaxLineBytes-linkEnvelope) / 4 * 3
}

// Call implements link.Link. addr is the destination's node id. Errors: a
// message never written or too large to send wraps link.ErrNotSent, as
// does a refusal by the remote node before any handler ran (a definite
// error code); the handler's own error is a *link.RemoteError; silence
// until ctx ends leaves the outcome unknown.
func (l *Link) Call(ctx context.Context, addr string, req link.Request) ([]byte, error) {
	msg := linkRequest{Type: LinkType, Kind: req.Kind, Group: req.Group, Body: req.Body}
	if room := l.maxPayload() - int64(len(req.Body)); req.StreamSize > room || room < 0 {
		return nil, fmt.Errorf("%w: %d bytes and a %d-byte stream exceed the %d a message may carry",
			link.ErrNotSent, len(req.Body), req.StreamSize, l.maxPayload())
	}
	if req.Stream != nil {
		msg.Stream = make([]byte, req.StreamSize)
		if _, err := io.ReadFull(req.Stream, msg.Stream); err != nil {
			return nil, fmt.Errorf("%w: read stream: %w", link.ErrNotSent, err)
		}
	}
	reply, err := l.node.RPC(ctx, addr, msg)
	var e *Error
	switch {
	case err == nil:
	case errors.As(err, &e) && e.Code == Crash:
		return nil, &link.RemoteError{Message: e.Text}
	case errors.As(err, &e) && Definite(e.Code), errors.Is(err, ErrNotSent):
		return nil, fmt.Errorf("%w: %w", link.ErrNotSent, err)
	default:
		return nil, fmt.Errorf("link %v to %s: %w", req.Kind, addr, err)
	}
	var out linkReply
	if err := reply.Decode(&out); err != nil || out.Type != LinkOKType {
		return nil, fmt.Errorf("link %v to %s: unexpected reply %s", req.Kind, addr, reply.Body)
	}
	return out.Body, nil
}

// Handle implements link.Link.
func (l *Link) Handle(kind link.Kind, h link.Handler) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.handlers[kind] = h
}

// serve runs the handler of one link message. The handler's error goes
// back as Crash, the code Call reads as the handler's own.
func (l *Link) serve(ctx context.Context, msg Message) (any, error) {
	var req linkRequest
	if err := msg.Decode(&req); err != nil {
		return nil, err
	}
	l.mu.Lock()
	h := l.handlers[req.Kind]
	l.mu.Unlock()
	if h == nil {
		return nil, NewError(Crash, fmt.Sprintf("link: no handler for %v requests", req.Kind))
	}
	r := link.Request{Kind: req.Kind, Group: req.Group, Body: req.Body}
	if req.Stream != nil {
		r.Stream, r.StreamSize = bytes.NewReader(req.Stream), int64(len(req.Stream))
	}
	out, err := h(ctx, r)
	if err != nil {
		return nil, NewError(Crash, err.Error())
	}
	return linkReply{Type: LinkOKType, Body: out}, nil
}
