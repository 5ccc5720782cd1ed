package sim

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	memberlink "github.com/lockstep/lockstep/core/link"
	"github.com/lockstep/lockstep/core/raftlink"
)

// MemberLink is a core/link.Link over the Network, so the production code
// that runs over a member's link (core/raftlink, core/forward) runs here
// under every fault the Network injects. A request travels as one Call
// from the node that owns the link to the node its address names, where
// the link registered with HandleMember serves it.
type MemberLink struct {
	net  *Network
	from string

	mu       sync.Mutex
	handlers map[memberlink.Kind]memberlink.Handler
}

var _ memberlink.Link = (*MemberLink)(nil)

// NewMemberLink returns node id's link; HandleMember serves its handlers.
func (n *Network) NewMemberLink(id string) *MemberLink {
	return &MemberLink{net: n, from: id, handlers: make(map[memberlink.Kind]memberlink.Handler)}
}

// RaftConfig is core/raftlink's production config for node id, but with
// Options.RPCTimeout as its RPC timeout: the Network drops messages, which
// TCP would retransmit, and a dropped one is only noticed at the timeout.
func (n *Network) RaftConfig(id string) raftlink.Config {
	cfg := raftlink.DefaultConfig(id)
	cfg.Timeout = n.opts.RPCTimeout
	cfg.QuietWithin = min(cfg.QuietWithin, cfg.Timeout)
	return cfg
}

// linkMagic starts every link request on the wire: an HTTP request never
// starts with a zero byte, so one Call handler serves both.
const linkMagic = 0

// Call implements memberlink.Link. A stream is read whole and sent with the
// request: the simulator's messages are whole.
func (l *MemberLink) Call(ctx context.Context, addr string, req memberlink.Request) ([]byte, error) {
	payload := []byte{linkMagic, byte(req.Kind)}
	payload = binary.AppendUvarint(payload, req.Group)
	payload = binary.AppendUvarint(payload, uint64(len(req.Body)))
	payload = append(payload, req.Body...)
	if req.Stream != nil {
		data := make([]byte, req.StreamSize)
		if _, err := io.ReadFull(req.Stream, data); err != nil {
			return nil, fmt.Errorf("%w: read stream: %w", memberlink.ErrNotSent, err)
		}
		payload = append(payload, data...)
	}
	out, err := l.net.Call(ctx, l.from, addr, payload)
	switch {
	case err == nil:
		return out, nil
	case errors.Is(err, ErrNotDelivered):
		return nil, fmt.Errorf("%w: %w", memberlink.ErrNotSent, err)
	case errors.Is(err, ErrRemote):
		// The handler's own text, as TCP carries it, without Call's prefix.
		_, msg, _ := strings.Cut(err.Error(), ErrRemote.Error()+": ")
		return nil, &memberlink.RemoteError{Message: msg}
	default:
		return nil, err
	}
}

// Handle implements memberlink.Link.
func (l *MemberLink) Handle(kind memberlink.Kind, h memberlink.Handler) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.handlers[kind] = h
}

// serve runs the handler of one request that arrived on this link's node.
func (l *MemberLink) serve(ctx context.Context, raw []byte) ([]byte, error) {
	if len(raw) < 2 {
		return nil, errors.New("sim link: short request")
	}
	req := memberlink.Request{Kind: memberlink.Kind(raw[1])}
	rest := raw[2:]
	var n int
	if req.Group, n = binary.Uvarint(rest); n <= 0 {
		return nil, errors.New("sim link: bad group")
	}
	rest = rest[n:]
	size, n := binary.Uvarint(rest)
	if n <= 0 || size > uint64(len(rest)-n) {
		return nil, errors.New("sim link: bad body")
	}
	req.Body, rest = rest[n:n+int(size)], rest[n+int(size):]
	if len(rest) > 0 {
		req.Stream, req.StreamSize = bytes.NewReader(rest), int64(len(rest))
	}
	l.mu.Lock()
	h := l.handlers[req.Kind]
	l.mu.Unlock()
	if h == nil {
		return nil, fmt.Errorf("link: no handler for %v requests", req.Kind)
	}
	return h(ctx, req)
}
