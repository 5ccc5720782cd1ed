// Package forward owns member-to-leader traffic, both ends, for every Raft
// group of a member: a member that takes a request for a group it does not
// lead forwards the encoded command to the group's leader, which proposes
// it and sends back the encoded result; a member that must learn how far
// its group's log goes asks the leader for its read index. It runs over a
// core/link, so every group's forwards to one member share that member's
// one connection, and lockd and the simulator run this same code.
package forward

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/lockstep/lockstep/core/link"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/tracing"
)

// Group is what a Raft group's leader offers the members that forward to
// it (node.Node for the lock shards, meta.Group for the metadata group).
type Group interface {
	// ServeForward proposes an encoded command on this leader and returns
	// the encoded answer. Its errors are classified as core/node's:
	// ErrNotLeader (refused before proposing), ErrUnavailable or
	// ErrShutdown (surely not applied), lock.ErrInvalid (never applies),
	// ErrIndeterminate (proposed, outcome unknown).
	ServeForward(ctx context.Context, cmd []byte) ([]byte, error)
}

// ReadIndexGroup is a Group that also answers read-index queries.
type ReadIndexGroup interface {
	Group
	ServeReadIndex() (node.ReadIndex, error)
}

// Forwarder is a member's end of forwarding: it serves the groups this
// member runs to the other members, and forwards to theirs.
type Forwarder struct {
	link link.Link
	// tracer carries a forward's span context to the leader (nil: off).
	tracer *tracing.Tracer

	mu     sync.RWMutex
	groups map[uint64]Group
}

// New serves forwarded commands and read-index queries on l; tracer, when
// set, links the leader's spans to the forwarding member's.
func New(l link.Link, tracer *tracing.Tracer) *Forwarder {
	f := &Forwarder{link: l, tracer: tracer, groups: make(map[uint64]Group)}
	l.Handle(link.KindForward, f.serveForward)
	l.Handle(link.KindReadIndex, f.serveReadIndex)
	return f
}

// Serve answers the other members' forwards to group with g, until the
// returned stop (a group that shuts down stops being served).
func (f *Forwarder) Serve(group uint64, g Group) (stop func()) {
	f.mu.Lock()
	f.groups[group] = g
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.groups[group] == g {
			delete(f.groups, group)
		}
	}
}

func (f *Forwarder) group(g uint64) Group {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.groups[g]
}

// For returns group's end of forwarding, as a node.Config.Forwarder.
func (f *Forwarder) For(group uint64) *GroupForwarder { return &GroupForwarder{f: f, group: group} }

// GroupForwarder forwards one group's commands and queries to its leader.
type GroupForwarder struct {
	f     *Forwarder
	group uint64
}

var (
	_ ReadIndexGroup   = (*node.Node)(nil)
	_ node.Forwarder   = (*GroupForwarder)(nil)
	_ node.ReadIndexer = (*GroupForwarder)(nil)
)

// Forward implements node.Forwarder. The request is the caller's span
// context (a traceparent, often empty), length first, then the command.
func (g *GroupForwarder) Forward(ctx context.Context, leader node.Peer, cmd []byte) ([]byte, error) {
	tp := g.f.tracer.Traceparent(ctx)
	body := make([]byte, 0, 1+len(tp)+len(cmd))
	body = append(binary.AppendUvarint(body, uint64(len(tp))), tp...)
	body = append(body, cmd...)
	out, err := g.f.link.Call(ctx, leader.RaftAddr, link.Request{Kind: link.KindForward, Group: g.group, Body: body})
	if err != nil {
		if errors.Is(err, link.ErrNotSent) {
			return nil, fmt.Errorf("%w: %w", node.ErrUnavailable, err)
		}
		return nil, err // sent: the outcome is unknown
	}
	return decodeReply(out)
}

// ReadIndex implements node.ReadIndexer. A query changes nothing, so
// every failure is only unavailable.
func (g *GroupForwarder) ReadIndex(ctx context.Context, leader node.Peer) (node.ReadIndex, error) {
	out, err := g.f.link.Call(ctx, leader.RaftAddr, link.Request{Kind: link.KindReadIndex, Group: g.group})
	if err != nil {
		return node.ReadIndex{}, fmt.Errorf("%w: ask %s: %w", node.ErrUnavailable, leader.ID, err)
	}
	body, err := decodeReply(out)
	if err != nil {
		return node.ReadIndex{}, err
	}
	var ri node.ReadIndex
	var n int
	if ri.Commit, n = binary.Uvarint(body); n > 0 {
		body = body[n:]
		if ri.Command, n = binary.Uvarint(body); n > 0 && n == len(body) {
			return ri, nil
		}
	}
	return node.ReadIndex{}, fmt.Errorf("%w: %s's read index does not decode", node.ErrUnavailable, leader.ID)
}

func (f *Forwarder) serveForward(ctx context.Context, req link.Request) ([]byte, error) {
	g := f.group(req.Group)
	if g == nil {
		return encodeError(fmt.Errorf("%w: group %d is not running on this member (starting or stopping)", node.ErrUnavailable, req.Group)), nil
	}
	n, size := binary.Uvarint(req.Body)
	if size <= 0 || n > uint64(len(req.Body)-size) {
		return encodeError(fmt.Errorf("%w: forward request does not decode", lock.ErrInvalid)), nil
	}
	ctx = f.tracer.WithTraceparent(ctx, string(req.Body[size:size+int(n)]))
	out, err := g.ServeForward(ctx, req.Body[size+int(n):])
	if err != nil {
		return encodeError(err), nil
	}
	return append([]byte{byte(statusOK)}, out...), nil
}

func (f *Forwarder) serveReadIndex(ctx context.Context, req link.Request) ([]byte, error) {
	g, ok := f.group(req.Group).(ReadIndexGroup)
	if !ok {
		return encodeError(fmt.Errorf("%w: group %d answers no read-index queries on this member", node.ErrUnavailable, req.Group)), nil
	}
	ri, err := g.ServeReadIndex()
	if err != nil {
		return encodeError(err), nil
	}
	out := binary.AppendUvarint([]byte{byte(statusOK)}, ri.Commit)
	return binary.AppendUvarint(out, ri.Command), nil
}

// status is the first byte of a reply: what the forwarding member may
// conclude. The rest is the answer (statusOK) or the leader's message.
type status byte

const (
	statusOK status = iota
	// statusNotLeader: refused before proposing; retry at the leader.
	statusNotLeader
	// statusUnavailable: surely not applied; safe to retry.
	statusUnavailable
	// statusOutcomeUnknown: proposed, outcome unknown.
	statusOutcomeUnknown
	// statusInvalid: the command can never apply.
	statusInvalid
	statusInternal
)

// encodeError is the reply for a leader's error.
func encodeError(err error) []byte {
	s := statusInternal
	switch {
	case errors.Is(err, node.ErrNotLeader):
		s = statusNotLeader
	case errors.Is(err, node.ErrUnavailable), errors.Is(err, node.ErrShutdown):
		s = statusUnavailable
	case errors.Is(err, lock.ErrCorrupt), errors.Is(err, lock.ErrInvalid):
		s = statusInvalid
	case errors.Is(err, node.ErrIndeterminate):
		s = statusOutcomeUnknown
	}
	return append([]byte{byte(s)}, err.Error()...)
}

// decodeReply maps a reply back to the answer, or to the error the leader
// had, so the forwarding member classifies it as the leader would.
func decodeReply(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty forward reply", node.ErrIndeterminate)
	}
	msg := string(b[1:])
	switch status(b[0]) {
	case statusOK:
		return b[1:], nil
	case statusNotLeader:
		return nil, fmt.Errorf("%w: %s", node.ErrNotLeader, msg)
	case statusUnavailable:
		return nil, fmt.Errorf("%w: leader says %s", node.ErrUnavailable, msg)
	case statusInvalid:
		return nil, fmt.Errorf("%w: leader says %s", lock.ErrInvalid, msg)
	case statusOutcomeUnknown:
		return nil, fmt.Errorf("%w: leader says %s", node.ErrIndeterminate, msg)
	default:
		return nil, fmt.Errorf("forward: leader says %s", msg)
	}
}
