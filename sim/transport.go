package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Transport is a raft.Transport whose RPCs travel over a Network: each RPC
// samples a request latency, is delivered to the target's consumer channel
// (or heartbeat handler), waits for raft's answer and carries the response
// back with its own latency. A lost request or response makes the caller
// fail after the RPC timeout, like a TCP timeout.
//
// Requests and responses are deep-copied at each end (see copyMessage) and
// raft's errors cross as text, as they would over raft.NetworkTransport.
type Transport struct {
	net *Network
	id  string
	// group is the Raft group this transport carries (see NewGroupTransport).
	group    uint64
	consumer chan raft.RPC
	done     chan struct{} // closed by Close

	closeOnce sync.Once

	mu        sync.Mutex
	heartbeat func(raft.RPC)
	blocked   map[string]bool // routes removed by Disconnect
	blockAll  bool            // DisconnectAll: only routes in allowed remain
	allowed   map[string]bool // routes restored by Connect after DisconnectAll
}

var (
	_ raft.Transport   = (*Transport)(nil)
	_ raft.WithClose   = (*Transport)(nil)
	_ raft.WithPeers   = (*Transport)(nil)
	_ raft.WithPreVote = (*Transport)(nil)
)

// consumerCap matches raft.InmemTransport's consumer buffer.
const consumerCap = 16

// maxSnapshotBytes bounds the snapshot a simulated InstallSnapshot copies into memory.
const maxSnapshotBytes = 256 << 20

// NewTransport registers a transport for node id, whose raft ServerAddress is
// id itself. An id may be registered again after its transport is closed,
// which models a crash and restart with a new raft instance.
func (n *Network) NewTransport(id string) (*Transport, error) {
	return n.NewGroupTransport(id, 0)
}

// NewGroupTransport registers Raft group group's transport of node id. Its
// raft ServerAddress is still id: a node's groups share its network
// identity (as groups share a member's one port through core/mux), so every
// link decision — partition, cut, pause, loss, delay — is made by node id
// and hits all of a node's groups alike, while an RPC reaches only the
// same group's transport at the target.
func (n *Network) NewGroupTransport(id string, group uint64) (*Transport, error) {
	t := &Transport{
		net:      n,
		id:       id,
		group:    group,
		consumer: make(chan raft.RPC, consumerCap),
		done:     make(chan struct{}),
		blocked:  make(map[string]bool),
		allowed:  make(map[string]bool),
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	key := endpoint{id, group}
	if _, ok := n.transports[key]; ok {
		return nil, fmt.Errorf("sim: node %q already has an open transport for group %d", id, group)
	}
	n.transports[key] = t
	n.recordLocked(EventUp, id, "", t.what())
	return t, nil
}

// endpoint is one group's transport of one node.
type endpoint struct {
	id    string
	group uint64
}

func (n *Network) transport(id string, group uint64) *Transport {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.transports[endpoint{id, group}]
}

// label names an RPC of this transport's group in events.
func (t *Transport) label(rpc string) string {
	if t.group == 0 {
		return rpc
	}
	return fmt.Sprintf("%s g%d", rpc, t.group)
}

// what names the transport in events: "transport" for group 0, so
// single-group logs read as before.
func (t *Transport) what() string {
	if t.group == 0 {
		return "transport"
	}
	return fmt.Sprintf("transport g%d", t.group)
}

// Close unregisters the transport; RPCs to it are then lost and its callers
// time out. raft calls it on Shutdown.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		close(t.done)
		t.net.mu.Lock()
		defer t.net.mu.Unlock()
		if key := (endpoint{t.id, t.group}); t.net.transports[key] == t {
			delete(t.net.transports, key)
		}
		t.net.recordLocked(EventDown, t.id, "", t.what())
	})
	return nil
}

// Consumer implements raft.Transport.
func (t *Transport) Consumer() <-chan raft.RPC { return t.consumer }

// LocalAddr implements raft.Transport.
func (t *Transport) LocalAddr() raft.ServerAddress { return raft.ServerAddress(t.id) }

// SetHeartbeatHandler implements raft.Transport: heartbeats bypass the
// consumer channel, as with raft.NetworkTransport.
func (t *Transport) SetHeartbeatHandler(cb func(raft.RPC)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.heartbeat = cb
}

// EncodePeer implements raft.Transport.
func (t *Transport) EncodePeer(_ raft.ServerID, addr raft.ServerAddress) []byte {
	return []byte(addr)
}

// DecodePeer implements raft.Transport.
func (t *Transport) DecodePeer(buf []byte) raft.ServerAddress { return raft.ServerAddress(buf) }

// AppendEntriesPipeline always returns raft.ErrPipelineReplicationNotSupported:
// raft then replicates with synchronous AppendEntries, which keeps one RPC per
// follower in flight and every message visible to the network's faults.
func (t *Transport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// AppendEntries implements raft.Transport.
func (t *Transport) AppendEntries(_ raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return roundTrip(t, target, "AppendEntries", args, resp, nil, t.net.opts.RPCTimeout)
}

// RequestVote implements raft.Transport.
func (t *Transport) RequestVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return roundTrip(t, target, "RequestVote", args, resp, nil, t.net.opts.RPCTimeout)
}

// RequestPreVote implements raft.WithPreVote.
func (t *Transport) RequestPreVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return roundTrip(t, target, "RequestPreVote", args, resp, nil, t.net.opts.RPCTimeout)
}

// InstallSnapshot implements raft.Transport. The snapshot (args.Size bytes of
// data) is copied before sending, so the receiver reads its own copy.
func (t *Transport) InstallSnapshot(_ raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	if args.Size < 0 || args.Size > maxSnapshotBytes {
		return fmt.Errorf("sim: snapshot of %d bytes exceeds the simulator's %d", args.Size, maxSnapshotBytes)
	}
	snapshot := make([]byte, args.Size)
	if _, err := io.ReadFull(data, snapshot); err != nil {
		return fmt.Errorf("sim: read snapshot: %w", err)
	}
	// 10× like raft.InmemTransport: a snapshot is a long transfer.
	return roundTrip(t, target, "InstallSnapshot", args, resp, snapshot, 10*t.net.opts.RPCTimeout)
}

// TimeoutNow implements raft.Transport.
func (t *Transport) TimeoutNow(_ raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return roundTrip(t, target, "TimeoutNow", args, resp, nil, 10*t.net.opts.RPCTimeout)
}

// Connect implements raft.WithPeers by restoring the route to peer; routing
// itself is by node ID through the Network, so t is ignored.
func (t *Transport) Connect(peer raft.ServerAddress, _ raft.Transport) {
	t.mu.Lock()
	delete(t.blocked, string(peer))
	if t.blockAll {
		t.allowed[string(peer)] = true
	}
	t.mu.Unlock()
	t.net.record(EventConnect, t.id, string(peer), "")
}

// Disconnect implements raft.WithPeers: RPCs from this transport to peer are
// lost until Connect, like raft.InmemTransport's one-way route removal.
func (t *Transport) Disconnect(peer raft.ServerAddress) {
	t.mu.Lock()
	t.blocked[string(peer)] = true
	delete(t.allowed, string(peer))
	t.mu.Unlock()
	t.net.record(EventDisconnect, t.id, string(peer), "")
}

// DisconnectAll implements raft.WithPeers: every outgoing route is removed
// until restored one by one with Connect.
func (t *Transport) DisconnectAll() {
	t.mu.Lock()
	t.blockAll = true
	t.blocked = make(map[string]bool)
	t.allowed = make(map[string]bool)
	t.mu.Unlock()
	t.net.record(EventDisconnect, t.id, "", "all")
}

func (t *Transport) routed(peer string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.blocked[peer] && (!t.blockAll || t.allowed[peer])
}

// rpcCall is one RPC in flight.
type rpcCall struct {
	name     string // RPC name, for events and errors
	args     any    // private copy of the request; each delivered copy gets its own copy of it
	snapshot []byte // InstallSnapshot data, nil otherwise
	timeout  time.Duration
}

// rpcReply is raft's answer: errors cross as text, as on a real wire.
type rpcReply struct {
	resp   any
	errMsg string
}

// exchange is the caller's side of one RPC: where the reply or the reason
// for its loss lands.
type exchange struct {
	reply chan rpcReply   // capacity 1: the first arriving response
	lost  chan lossReason // capacity 1: the first loss
}

// roundTrip runs one typed RPC; Resp is raft's response struct for Req.
func roundTrip[Req, Resp any](t *Transport, target raft.ServerAddress, name string, args *Req, resp *Resp, snapshot []byte, timeout time.Duration) error {
	r, err := t.call(target, rpcCall{name: name, args: copyMessage(args), snapshot: snapshot, timeout: timeout})
	if err != nil {
		return err
	}
	if out, ok := r.resp.(*Resp); ok {
		*resp = *out
	}
	if r.errMsg != "" {
		return errors.New(r.errMsg)
	}
	return nil
}

// call sends c to target and waits for the reply, the timeout or shutdown.
func (t *Transport) call(target raft.ServerAddress, c rpcCall) (rpcReply, error) {
	if isClosed(t.done) {
		return rpcReply{}, raft.ErrTransportShutdown
	}
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	x := exchange{reply: make(chan rpcReply, 1), lost: make(chan lossReason, 1)}
	to := string(target)
	m := message{from: t.id, to: to, what: t.label(c.name), fromDone: t.done, lost: x.lost}
	switch peer := t.net.transport(to, t.group); {
	case !t.routed(to):
		t.net.refuse(m, lossDisconnected)
	case peer == nil:
		t.net.refuse(m, lossNoEndpoint)
	default:
		m.toDone = peer.done
		t.net.post(m, func(dup bool) { peer.serve(t, c, dup, x) })
	}
	select {
	case r := <-x.reply:
		return r, nil
	case <-timer.C:
		return rpcReply{}, lossError(fmt.Sprintf("sim: %s %s->%s", c.name, t.id, to), x.lost)
	case <-t.done:
		return rpcReply{}, raft.ErrTransportShutdown
	case <-t.net.done:
		return rpcReply{}, ErrClosed
	}
}

// serve runs on the receiving side of a delivered request: it hands raft a
// fresh copy, waits for raft's answer and carries it back to caller.
// A duplicate's answer is discarded.
func (t *Transport) serve(caller *Transport, c rpcCall, dup bool, x exchange) {
	respCh := make(chan raft.RPCResponse, 1)
	rpc := raft.RPC{Command: copyMessage(c.args), RespChan: respCh}
	if c.snapshot != nil {
		rpc.Reader = bytes.NewReader(c.snapshot)
	}
	if !t.dispatch(rpc) {
		return
	}
	var r raft.RPCResponse
	select {
	case r = <-respCh:
	case <-t.done:
		return
	case <-t.net.done:
		return
	}
	if dup {
		return
	}
	var out rpcReply
	if r.Error != nil {
		out.errMsg = r.Error.Error()
	}
	if r.Response != nil {
		out.resp = copyMessage(r.Response)
	}
	t.reply(caller, c, x, out)
}

// reply carries out back to caller over the network.
func (t *Transport) reply(caller *Transport, c rpcCall, x exchange, out rpcReply) {
	m := message{from: t.id, to: caller.id, what: t.label(c.name), response: true, fromDone: t.done, toDone: caller.done, lost: x.lost}
	if t.net.transmit(m) {
		select {
		case x.reply <- out:
		default:
		}
	}
}

// dispatch hands rpc to raft: heartbeats to the fast-path handler when set,
// everything else to the consumer channel. It reports false if the
// transport or network closed first.
func (t *Transport) dispatch(rpc raft.RPC) bool {
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
	case <-t.done:
		return false
	case <-t.net.done:
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
