package maelstrom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// RaftRPCType is the message type that carries one Raft RPC between nodes;
// the reply is RaftRPCOKType with the same in_reply_to.
const (
	RaftRPCType   = "raft_rpc"
	RaftRPCOKType = "raft_rpc_ok"
)

// RaftRPC is the body of a raft_rpc message. Args is the request struct of
// hashicorp/raft as JSON ([]byte fields as base64). Group names the Raft
// group, since one process may run several over the same network.
type RaftRPC struct {
	Type  string          `json:"type"`
	Group string          `json:"group"`
	RPC   string          `json:"rpc"`
	Args  json.RawMessage `json:"args"`
	// Data is the snapshot of an install_snapshot, copied whole.
	Data []byte `json:"data,omitempty"`
}

// raftRPCReply is the body of a raft_rpc_ok message. Raft's own errors
// cross as text, as over raft.NetworkTransport.
type raftRPCReply struct {
	Type  string          `json:"type"`
	Resp  json.RawMessage `json:"resp,omitempty"`
	Error string          `json:"error,omitempty"`
}

// The RPC names on the wire.
const (
	rpcAppendEntries   = "append_entries"
	rpcRequestVote     = "request_vote"
	rpcRequestPreVote  = "request_pre_vote"
	rpcInstallSnapshot = "install_snapshot"
	rpcTimeoutNow      = "timeout_now"
)

// Caller sends a request and waits for its reply; *Node is one. It is the
// seam between the transport and the process's stdin/stdout.
type Caller interface {
	RPC(ctx context.Context, dest string, body any) (Message, error)
}

// TransportOptions tunes a Transport; zero values take the defaults.
type TransportOptions struct {
	// Group names the Raft group on the wire.
	Group string
	// Timeout bounds one RPC round trip. A request or reply Maelstrom
	// dropped (a partition) surfaces as this timeout, like a TCP timeout.
	// InstallSnapshot and TimeoutNow get ten times as long.
	Timeout time.Duration
	// MaxSnapshotBytes bounds the snapshot one InstallSnapshot copies into
	// a message; it must fit the receiver's Options.MaxLineBytes once
	// base64 encoded.
	MaxSnapshotBytes int64
}

const (
	defaultRPCTimeout       = time.Second
	defaultMaxSnapshotBytes = 8 << 20
	// consumerCap matches raft.InmemTransport's consumer buffer.
	consumerCap = 16
)

// Transport is a raft.Transport whose RPCs are Maelstrom messages: each
// request is a raft_rpc message to the target node (whose node id is its
// raft.ServerAddress) and the response comes back in its reply.
type Transport struct {
	caller   Caller
	local    raft.ServerAddress
	opts     TransportOptions
	consumer chan raft.RPC
	done     chan struct{}
	// life ends at Close, ending the RPCs in flight.
	life context.Context
	end  context.CancelFunc

	closeOnce sync.Once

	mu        sync.Mutex
	heartbeat func(raft.RPC)
	blocked   map[raft.ServerAddress]bool
	blockAll  bool
	allowed   map[raft.ServerAddress]bool
}

var (
	_ raft.Transport   = (*Transport)(nil)
	_ raft.WithClose   = (*Transport)(nil)
	_ raft.WithPeers   = (*Transport)(nil)
	_ raft.WithPreVote = (*Transport)(nil)
)

// NewTransport returns the transport of node local for one Raft group.
// Incoming raft_rpc messages of that group must be handed to Serve.
func NewTransport(c Caller, local string, opts TransportOptions) *Transport {
	if opts.Timeout <= 0 {
		opts.Timeout = defaultRPCTimeout
	}
	if opts.MaxSnapshotBytes <= 0 {
		opts.MaxSnapshotBytes = defaultMaxSnapshotBytes
	}
	life, end := context.WithCancel(context.Background())
	return &Transport{
		caller: c, local: raft.ServerAddress(local), opts: opts,
		consumer: make(chan raft.RPC, consumerCap), done: make(chan struct{}), life: life, end: end,
		blocked: make(map[raft.ServerAddress]bool), allowed: make(map[raft.ServerAddress]bool),
	}
}

// Close implements raft.WithClose: RPCs in flight fail and incoming ones are
// refused.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		close(t.done)
		t.end()
	})
	return nil
}

func (t *Transport) closed() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// Consumer implements raft.Transport.
func (t *Transport) Consumer() <-chan raft.RPC { return t.consumer }

// LocalAddr implements raft.Transport.
func (t *Transport) LocalAddr() raft.ServerAddress { return t.local }

// SetHeartbeatHandler implements raft.Transport: heartbeats skip the
// consumer queue, as with raft.NetworkTransport, so a busy follower still
// hears its leader.
func (t *Transport) SetHeartbeatHandler(cb func(raft.RPC)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.heartbeat = cb
}

// EncodePeer implements raft.Transport.
func (t *Transport) EncodePeer(_ raft.ServerID, addr raft.ServerAddress) []byte { return []byte(addr) }

// DecodePeer implements raft.Transport.
func (t *Transport) DecodePeer(b []byte) raft.ServerAddress { return raft.ServerAddress(b) }

// AppendEntriesPipeline is not supported: raft then sends one synchronous
// AppendEntries per follower at a time, which suits a message network
// where every RPC already has its own reply.
func (t *Transport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// AppendEntries implements raft.Transport.
func (t *Transport) AppendEntries(_ raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return roundTrip(t, target, rpcAppendEntries, args, resp, nil, t.opts.Timeout)
}

// RequestVote implements raft.Transport.
func (t *Transport) RequestVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return roundTrip(t, target, rpcRequestVote, args, resp, nil, t.opts.Timeout)
}

// RequestPreVote implements raft.WithPreVote: a node that was cut off asks
// before it disrupts a healthy leader with a higher term.
func (t *Transport) RequestPreVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return roundTrip(t, target, rpcRequestPreVote, args, resp, nil, t.opts.Timeout)
}

// InstallSnapshot implements raft.Transport. The snapshot (args.Size
// bytes) is read whole and sent inside the message; a snapshot larger than
// MaxSnapshotBytes is refused, and raft retries later.
func (t *Transport) InstallSnapshot(_ raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	if args.Size < 0 || args.Size > t.opts.MaxSnapshotBytes {
		return fmt.Errorf("maelstrom transport: snapshot of %d bytes exceeds the %d a message may carry", args.Size, t.opts.MaxSnapshotBytes)
	}
	snap := make([]byte, args.Size)
	if _, err := io.ReadFull(data, snap); err != nil {
		return fmt.Errorf("maelstrom transport: read snapshot: %w", err)
	}
	return roundTrip(t, target, rpcInstallSnapshot, args, resp, snap, 10*t.opts.Timeout)
}

// TimeoutNow implements raft.Transport.
func (t *Transport) TimeoutNow(_ raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return roundTrip(t, target, rpcTimeoutNow, args, resp, nil, 10*t.opts.Timeout)
}

// Connect implements raft.WithPeers: it restores the route to peer.
func (t *Transport) Connect(peer raft.ServerAddress, _ raft.Transport) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.blocked, peer)
	if t.blockAll {
		t.allowed[peer] = true
	}
}

// Disconnect implements raft.WithPeers: RPCs to peer fail until Connect.
func (t *Transport) Disconnect(peer raft.ServerAddress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.blocked[peer] = true
	delete(t.allowed, peer)
}

// DisconnectAll implements raft.WithPeers.
func (t *Transport) DisconnectAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.blockAll = true
	clear(t.blocked)
	clear(t.allowed)
}

func (t *Transport) routed(peer raft.ServerAddress) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.blocked[peer] && (!t.blockAll || t.allowed[peer])
}

// roundTrip sends one typed RPC and decodes raft's response into resp.
func roundTrip[Req, Resp any](t *Transport, target raft.ServerAddress, name string, args *Req, resp *Resp, data []byte, timeout time.Duration) error {
	if t.closed() {
		return raft.ErrTransportShutdown
	}
	if !t.routed(target) {
		return fmt.Errorf("maelstrom transport: %s to %s: route disconnected", name, target)
	}
	rawArgs, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("maelstrom transport: encode %s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(t.life, timeout)
	defer cancel()
	msg, err := t.caller.RPC(ctx, string(target), RaftRPC{Type: RaftRPCType, Group: t.opts.Group, RPC: name, Args: rawArgs, Data: data})
	if err != nil {
		if t.closed() {
			return raft.ErrTransportShutdown
		}
		return fmt.Errorf("maelstrom transport: %s to %s: %w", name, target, err)
	}
	var r raftRPCReply
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return fmt.Errorf("maelstrom transport: decode %s reply: %w", name, err)
	}
	if len(r.Resp) > 0 {
		if err := json.Unmarshal(r.Resp, resp); err != nil {
			return fmt.Errorf("maelstrom transport: decode %s response: %w", name, err)
		}
	}
	if r.Error != "" {
		return errors.New(r.Error)
	}
	return nil
}

// Serve handles one incoming raft_rpc message of this transport's group: it
// hands the request to raft and returns raft's response as the reply body.
func (t *Transport) Serve(ctx context.Context, msg Message) (any, error) {
	var req RaftRPC
	if err := json.Unmarshal(msg.Body, &req); err != nil {
		return nil, NewError(MalformedRequest, "raft_rpc: "+err.Error())
	}
	if t.closed() {
		return nil, NewError(TemporarilyUnavailable, "raft transport closed")
	}
	cmd, err := decodeArgs(req.RPC, req.Args)
	if err != nil {
		return nil, NewError(MalformedRequest, err.Error())
	}
	respCh := make(chan raft.RPCResponse, 1)
	rpc := raft.RPC{Command: cmd, RespChan: respCh}
	if req.RPC == rpcInstallSnapshot {
		rpc.Reader = bytes.NewReader(req.Data)
	}
	// The caller gives up after its timeout; waiting longer helps nobody.
	wait := 10 * t.opts.Timeout
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if !t.dispatch(ctx, rpc) {
		return nil, NewError(TemporarilyUnavailable, "raft did not take the rpc")
	}
	select {
	case r := <-respCh:
		out := raftRPCReply{Type: RaftRPCOKType}
		if r.Error != nil {
			out.Error = r.Error.Error()
		}
		if r.Response != nil {
			b, err := json.Marshal(r.Response)
			if err != nil {
				return nil, fmt.Errorf("encode %s response: %w", req.RPC, err)
			}
			out.Resp = b
		}
		return out, nil
	case <-ctx.Done():
		return nil, NewError(Timeout, "raft did not answer in time")
	case <-t.done:
		return nil, NewError(TemporarilyUnavailable, "raft transport closed")
	}
}

// dispatch gives rpc to raft: heartbeats to the fast-path handler when set,
// the rest to the consumer channel.
func (t *Transport) dispatch(ctx context.Context, rpc raft.RPC) bool {
	if isHeartbeat(rpc.Command) {
		t.mu.Lock()
		fn := t.heartbeat
		t.mu.Unlock()
		if fn != nil {
			fn(rpc)
			return true
		}
	}
	select {
	case t.consumer <- rpc:
		return true
	case <-ctx.Done():
		return false
	case <-t.done:
		return false
	}
}

// decodeArgs decodes the request struct named by rpc.
func decodeArgs(rpc string, raw json.RawMessage) (any, error) {
	var v any
	switch rpc {
	case rpcAppendEntries:
		v = new(raft.AppendEntriesRequest)
	case rpcRequestVote:
		v = new(raft.RequestVoteRequest)
	case rpcRequestPreVote:
		v = new(raft.RequestPreVoteRequest)
	case rpcInstallSnapshot:
		v = new(raft.InstallSnapshotRequest)
	case rpcTimeoutNow:
		v = new(raft.TimeoutNowRequest)
	default:
		return nil, fmt.Errorf("raft_rpc: unknown rpc %q", rpc)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("raft_rpc %s: %w", rpc, err)
	}
	return v, nil
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
