// Package raftlink runs the Raft RPCs of a member's groups over a
// core/link: one raft.Transport per group, every group's messages to a
// peer sharing the link's one connection to it.
package raftlink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/link"
)

// Config configures a member's Raft transports.
type Config struct {
	// Local is this member's address, as peers dial it (raft's
	// ServerAddress).
	Local string
	// Timeout bounds one RPC; an InstallSnapshot gets it once per
	// SnapshotChunk bytes, TimeoutNow ten times.
	Timeout       time.Duration
	SnapshotChunk int64
	// QuietWithin is how recently a follower must have answered this
	// group for the leader's redundant AppendEntries to it to be answered
	// here instead of sent (quiet.go); zero sends every one.
	QuietWithin time.Duration
}

// DefaultConfig returns the timeouts of hashicorp/raft's NetworkTransport
// as lockd used them.
func DefaultConfig(local string) Config {
	return Config{Local: local, Timeout: 5 * time.Second, SnapshotChunk: 256 << 10, QuietWithin: 100 * time.Millisecond}
}

// Validate reports a config New cannot run with.
func (c Config) Validate() error {
	if c.Local == "" || c.Timeout <= 0 || c.SnapshotChunk <= 0 {
		return errors.New("raftlink: Local, Timeout and SnapshotChunk are required")
	}
	if c.QuietWithin < 0 || c.QuietWithin > c.Timeout {
		return errors.New("raftlink: QuietWithin must be in 0..Timeout")
	}
	return nil
}

// Net is a member's Raft transports: it serves the link's KindRaft
// requests, handing each to its group's transport.
type Net struct {
	link link.Link
	cfg  Config

	mu     sync.Mutex
	groups map[uint64]*Transport
}

// New registers the Raft handler on l.
func New(l link.Link, cfg Config) (*Net, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Net{link: l, cfg: cfg, groups: make(map[uint64]*Transport)}
	l.Handle(link.KindRaft, n.serve)
	return n, nil
}

// Transport opens group's transport; Close releases it for a restart.
func (n *Net) Transport(group uint64) (*Transport, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.groups[group]; ok {
		return nil, fmt.Errorf("raftlink: group %d already has a transport", group)
	}
	life, end := context.WithCancel(context.Background())
	t := &Transport{net: n, group: group, consumer: make(chan raft.RPC, consumerCap), done: make(chan struct{}), life: life, end: end}
	n.groups[group] = t
	return t, nil
}

func (n *Net) transport(group uint64) *Transport {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.groups[group]
}

// consumerCap matches raft.NetworkTransport's consumer channel.
const consumerCap = 16

// Transport is one group's raft.Transport over the member's link.
type Transport struct {
	net      *Net
	group    uint64
	consumer chan raft.RPC
	done     chan struct{}
	once     sync.Once
	// life ends at Close, ending raft's calls in flight.
	life context.Context
	end  context.CancelFunc

	mu        sync.Mutex
	heartbeat func(raft.RPC)
	// beating guards the heartbeat handler: Close waits for the calls in
	// progress and admits none after (closed), so none runs on a raft
	// whose stores its owner closes next.
	beating sync.RWMutex
	closed  bool
	// followers are what this group's leader knows of each follower's
	// answers, to keep quiet (quiet.go).
	followers map[raft.ServerAddress]*follower
	quieted   atomic.Uint64
}

var (
	_ raft.Transport   = (*Transport)(nil)
	_ raft.WithClose   = (*Transport)(nil)
	_ raft.WithPreVote = (*Transport)(nil)
)

// Consumer implements raft.Transport.
func (t *Transport) Consumer() <-chan raft.RPC { return t.consumer }

// LocalAddr implements raft.Transport.
func (t *Transport) LocalAddr() raft.ServerAddress { return raft.ServerAddress(t.net.cfg.Local) }

// SetHeartbeatHandler implements raft.Transport: heartbeats skip the
// consumer channel, so a follower busy writing its log still answers
// them, as with raft.NetworkTransport.
func (t *Transport) SetHeartbeatHandler(cb func(raft.RPC)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.heartbeat = cb
}

// EncodePeer implements raft.Transport.
func (t *Transport) EncodePeer(_ raft.ServerID, addr raft.ServerAddress) []byte { return []byte(addr) }

// DecodePeer implements raft.Transport.
func (t *Transport) DecodePeer(buf []byte) raft.ServerAddress { return raft.ServerAddress(buf) }

// AppendEntriesPipeline implements raft.Transport: raft then replicates
// with one AppendEntries in flight per follower. Pipelining bought nothing
// here and v1.7.2's can wedge a follower (EXPERIMENTS.md, "Commit-path
// levers").
func (t *Transport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// AppendEntries implements raft.Transport. One that would tell a follower
// nothing new is answered here while the group is quiet (quiet.go).
func (t *Transport) AppendEntries(_ raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	f := t.follower(target)
	now := time.Now()
	if f.quiet(args, now, t.net.cfg.QuietWithin, resp) {
		t.quieted.Add(1)
		return nil
	}
	err := t.call(target, args, resp, t.net.cfg.Timeout, nil, 0)
	f.answered(args, resp, err, now)
	return err
}

// RequestVote implements raft.Transport.
func (t *Transport) RequestVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return t.call(target, args, resp, t.net.cfg.Timeout, nil, 0)
}

// RequestPreVote implements raft.WithPreVote.
func (t *Transport) RequestPreVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.call(target, args, resp, t.net.cfg.Timeout, nil, 0)
}

// InstallSnapshot implements raft.Transport: the snapshot streams after
// the request on a connection of its own, so it holds up no other group.
func (t *Transport) InstallSnapshot(_ raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	timeout := t.net.cfg.Timeout * time.Duration(max(1, args.Size/t.net.cfg.SnapshotChunk))
	return t.call(target, args, resp, timeout, data, args.Size)
}

// TimeoutNow implements raft.Transport.
func (t *Transport) TimeoutNow(_ raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return t.call(target, args, resp, 10*t.net.cfg.Timeout, nil, 0)
}

// Close implements raft.WithClose: the group's RPCs are no longer served
// here, and raft's calls still in flight end.
func (t *Transport) Close() error {
	t.once.Do(func() {
		close(t.done)
		t.end()
		t.beating.Lock()
		t.closed = true
		t.beating.Unlock()
		t.net.mu.Lock()
		if t.net.groups[t.group] == t {
			delete(t.net.groups, t.group)
		}
		t.net.mu.Unlock()
	})
	return nil
}

// call sends args to target and decodes the reply into resp; raft's own
// errors come back as their text, as over raft.NetworkTransport.
func (t *Transport) call(target raft.ServerAddress, args, resp any, timeout time.Duration, stream io.Reader, size int64) error {
	select {
	case <-t.done:
		return raft.ErrTransportShutdown
	default:
	}
	body, err := encode(nil, args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(t.life, timeout)
	defer cancel()
	out, err := t.net.link.Call(ctx, string(target), link.Request{Kind: link.KindRaft, Group: t.group, Body: body, Stream: stream, StreamSize: size})
	if err != nil {
		var remote *link.RemoteError
		if errors.As(err, &remote) {
			return errors.New(remote.Message)
		}
		return err
	}
	got, err := decode(out)
	if err != nil {
		return err
	}
	return assign(resp, got)
}

// assign copies the decoded response into raft's struct.
func assign(dst, src any) error {
	switch d := dst.(type) {
	case *raft.AppendEntriesResponse:
		if s, ok := src.(*raft.AppendEntriesResponse); ok {
			*d = *s
			return nil
		}
	case *raft.RequestVoteResponse:
		if s, ok := src.(*raft.RequestVoteResponse); ok {
			*d = *s
			return nil
		}
	case *raft.RequestPreVoteResponse:
		if s, ok := src.(*raft.RequestPreVoteResponse); ok {
			*d = *s
			return nil
		}
	case *raft.InstallSnapshotResponse:
		if s, ok := src.(*raft.InstallSnapshotResponse); ok {
			*d = *s
			return nil
		}
	case *raft.TimeoutNowResponse:
		if s, ok := src.(*raft.TimeoutNowResponse); ok {
			*d = *s
			return nil
		}
	}
	return fmt.Errorf("%w: %T in reply to a request expecting %T", errMalformed, src, dst)
}

// serve is the link handler of KindRaft: it hands the RPC to its group's
// raft and sends raft's answer back.
func (n *Net) serve(ctx context.Context, req link.Request) ([]byte, error) {
	t := n.transport(req.Group)
	if t == nil {
		return nil, fmt.Errorf("raftlink: no group %d here", req.Group)
	}
	cmd, err := decode(req.Body)
	if err != nil {
		return nil, err
	}
	respCh := make(chan raft.RPCResponse, 1)
	rpc := raft.RPC{Command: cmd, RespChan: respCh}
	if req.Stream != nil {
		rpc.Reader = req.Stream
	}
	if !t.dispatch(ctx, rpc) {
		return nil, raft.ErrTransportShutdown
	}
	select {
	case r := <-respCh:
		if r.Error != nil {
			return nil, r.Error
		}
		return encode(nil, r.Response)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.done:
		return nil, raft.ErrTransportShutdown
	}
}

// dispatch hands rpc to raft: a heartbeat to the fast-path handler when
// set, everything else to the consumer channel.
func (t *Transport) dispatch(ctx context.Context, rpc raft.RPC) bool {
	if isHeartbeat(rpc.Command) {
		t.mu.Lock()
		fn := t.heartbeat
		t.mu.Unlock()
		if fn != nil {
			// raft's own shutdown check in the handler can pass just before
			// it stops; its owner then closes the stores the handler writes
			// (a "store closed" panic): Close waits for this call instead.
			t.beating.RLock()
			defer t.beating.RUnlock()
			if t.closed {
				return false
			}
			fn(rpc)
			return true
		}
	}
	select {
	case t.consumer <- rpc:
		return true
	case <-t.done:
		return false
	case <-ctx.Done():
		return false
	}
}

// isHeartbeat applies raft.NetworkTransport's test for a heartbeat.
func isHeartbeat(cmd any) bool {
	req, ok := cmd.(*raft.AppendEntriesRequest)
	if !ok {
		return false
	}
	leader := req.RPCHeader.Addr
	if len(leader) == 0 {
		leader = req.Leader //nolint:staticcheck // raft.NetworkTransport still falls back to it
	}
	return req.Term != 0 && leader != nil && req.PrevLogEntry == 0 && req.PrevLogTerm == 0 &&
		len(req.Entries) == 0 && req.LeaderCommitIndex == 0
}
