package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/forward"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/raftadapter"
	"github.com/lockstep/lockstep/maelstrom"
)

// lockGroup is the real lock node of lockstep on this process; the node
// itself serves the commands (and read-index queries) forwarded to it.
type lockGroup struct {
	*node.Node
}

var _ forward.ReadIndexGroup = (*lockGroup)(nil)

func newLockGroup(id string, peers []string, trans raft.Transport, fwd node.Forwarder, opts Options) (*lockGroup, error) {
	var ps []node.Peer
	for _, p := range peers {
		ps = append(ps, node.Peer{ID: p, RaftAddr: p})
	}
	t := opts.Timing
	n, err := node.New(node.Config{
		ID: id, Peers: ps, Clock: node.NewMonotonicClock(),
		Logger: opts.Logger.With(slog.String("group", groupLock)), RaftLogs: t.RaftLogs,
		// Maelstrom nodes keep nothing across a restart: the stores are memory.
		Bootstrap: true, Transport: trans, Stores: raftadapter.NewMemStores(), Forwarder: fwd,
		HeartbeatTimeout: t.Heartbeat, ElectionTimeout: t.Election, LeaderLeaseTimeout: t.LeaderLease,
		SnapshotThreshold: t.SnapshotThreshold, TrailingLogs: t.TrailingLogs, SnapshotInterval: t.SnapshotInterval,
		ProposeTimeout: opts.RequestTimeout, Hooks: &node.Hooks{Bug: opts.Bug},
	})
	if err != nil {
		return nil, err
	}
	return &lockGroup{n}, nil
}

func (g *lockGroup) shutdown() error { return g.Shutdown() }

// The lock workload's messages (README, "Maelstrom"). Times a client sets
// are ms; times for checkers are the lock state machine's log time in ns
// (names ending in _ns), the clock leases expire by.
type acquireRequest struct {
	Resource string `json:"resource"`
	Client   string `json:"client"`
	TTL      int64  `json:"ttl"`
	Wait     int64  `json:"wait"`
	Mode     string `json:"mode"`
}

type acquireOK struct {
	Type          string `json:"type"`
	Granted       bool   `json:"granted"`
	LeaseID       string `json:"lease_id,omitempty"`
	FencingToken  uint64 `json:"fencing_token,omitempty"`
	Mode          string `json:"mode,omitempty"`
	ExpiresIn     int64  `json:"expires_in,omitempty"`
	ExpiresAtNs   int64  `json:"expires_at_ns,omitempty"`
	QueuePosition int    `json:"queue_position,omitempty"`
	LogTimeNs     int64  `json:"log_time_ns"`
}

type leaseRequest struct {
	Resource string `json:"resource"`
	LeaseID  string `json:"lease_id"`
	TTL      int64  `json:"ttl"`
}

type releaseOK struct {
	Type      string `json:"type"`
	LogTimeNs int64  `json:"log_time_ns"`
}

type renewOK struct {
	Type         string `json:"type"`
	ExpiresIn    int64  `json:"expires_in"`
	ExpiresAtNs  int64  `json:"expires_at_ns"`
	FencingToken uint64 `json:"fencing_token"`
	LogTimeNs    int64  `json:"log_time_ns"`
}

type holderView struct {
	LeaseID      string `json:"lease_id"`
	Client       string `json:"client"`
	Mode         string `json:"mode"`
	FencingToken uint64 `json:"fencing_token"`
	ExpiresAtNs  int64  `json:"expires_at_ns"`
}

type statusOK struct {
	Type      string       `json:"type"`
	Holders   []holderView `json:"holders"`
	Queued    int          `json:"queued"`
	LogTimeNs int64        `json:"log_time_ns"`
}

func malformed(text string) error { return maelstrom.NewError(maelstrom.MalformedRequest, text) }

// lockNode returns the lock group (started at init).
func (s *Server) lockNode() (*node.Node, error) {
	g, err := s.group(groupLock)
	if err != nil {
		return nil, ErrorFor(err)
	}
	return g.(*lockGroup).Node, nil
}

func (s *Server) handleAcquire(ctx context.Context, msg maelstrom.Message) (any, error) {
	var req acquireRequest
	if err := msg.Decode(&req); err != nil {
		return nil, err
	}
	mode, err := lock.ParseMode(req.Mode)
	switch {
	case req.Resource == "":
		return nil, malformed("acquire needs a resource")
	case req.TTL <= 0:
		return nil, malformed("acquire needs ttl > 0 (ms)")
	case req.Wait < 0:
		return nil, malformed("wait must be >= 0 (ms)")
	case err != nil:
		return nil, malformed(err.Error())
	}
	client := req.Client
	if client == "" {
		client = msg.Src // the Maelstrom client (c1, c2, ...) holds the lease
	}
	n, err := s.lockNode()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout+time.Duration(req.Wait)*time.Millisecond)
	defer cancel()
	res, err := n.Acquire(ctx, lock.Command{
		Resource: req.Resource, ClientID: client, Mode: mode, Policy: lock.FIFO, TTLMs: req.TTL, WaitMs: req.Wait,
	})
	if err != nil {
		return nil, acquireError(err, req.Wait)
	}
	if !res.Granted {
		return acquireOK{Type: "acquire_ok", QueuePosition: res.Position, LogTimeNs: res.LogTime}, nil
	}
	return acquireOK{
		Type: "acquire_ok", Granted: true, LeaseID: res.Lease.ID.String(), FencingToken: res.Lease.Token,
		Mode: res.Lease.Mode.String(), ExpiresIn: expiresInMs(res.Lease.ExpiresAt, res.LogTime),
		ExpiresAtNs: res.Lease.ExpiresAt, LogTimeNs: res.LogTime,
	}, nil
}

func (s *Server) decodeLease(msg maelstrom.Message) (leaseRequest, lock.LeaseID, error) {
	var req leaseRequest
	if err := msg.Decode(&req); err != nil {
		return req, lock.LeaseID{}, err
	}
	if req.Resource == "" {
		return req, lock.LeaseID{}, malformed(msg.Type() + " needs a resource")
	}
	if req.TTL < 0 {
		return req, lock.LeaseID{}, malformed("ttl must be >= 0 (ms)")
	}
	id, err := lock.ParseLeaseID(req.LeaseID)
	if err != nil {
		return req, lock.LeaseID{}, malformed(err.Error())
	}
	return req, id, nil
}

// leaseError is ErrorFor, plus the log time a not-holder answer was decided
// at, which lets a checker judge it exactly.
func leaseError(err error, res lock.Result) error {
	e := ErrorFor(err)
	if errors.Is(err, node.ErrNotHolder) && res.LogTime != 0 {
		e.Extra = map[string]any{"log_time_ns": res.LogTime}
	}
	return e
}

func (s *Server) handleRelease(ctx context.Context, msg maelstrom.Message) (any, error) {
	req, id, err := s.decodeLease(msg)
	if err != nil {
		return nil, err
	}
	n, err := s.lockNode()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	res, err := n.Release(ctx, req.Resource, id)
	if err != nil {
		return nil, leaseError(err, res)
	}
	return releaseOK{Type: "release_ok", LogTimeNs: res.LogTime}, nil
}

func (s *Server) handleRenew(ctx context.Context, msg maelstrom.Message) (any, error) {
	req, id, err := s.decodeLease(msg)
	if err != nil {
		return nil, err
	}
	n, err := s.lockNode()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	res, err := n.Renew(ctx, req.Resource, id, req.TTL)
	if err != nil {
		return nil, leaseError(err, res)
	}
	return renewOK{
		Type: "renew_ok", ExpiresIn: expiresInMs(res.Lease.ExpiresAt, res.LogTime), ExpiresAtNs: res.Lease.ExpiresAt,
		FencingToken: res.Lease.Token, LogTimeNs: res.LogTime,
	}, nil
}

func (s *Server) handleStatus(ctx context.Context, msg maelstrom.Message) (any, error) {
	var req leaseRequest
	if err := msg.Decode(&req); err != nil {
		return nil, err
	}
	if req.Resource == "" {
		return nil, malformed("status needs a resource")
	}
	n, err := s.lockNode()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	res, err := n.Status(ctx, req.Resource)
	if err != nil {
		return nil, ErrorFor(err)
	}
	out := statusOK{Type: "status_ok", Holders: []holderView{}, LogTimeNs: res.LogTime}
	if st := res.Status; st != nil {
		for _, h := range st.Holders {
			out.Holders = append(out.Holders, holderView{
				LeaseID: h.ID.String(), Client: h.ClientID, Mode: h.Mode.String(), FencingToken: h.Token, ExpiresAtNs: h.ExpiresAt,
			})
		}
		out.Queued = len(st.Queue)
	}
	return out, nil
}

func expiresInMs(expiresAt, logTime int64) int64 {
	if expiresAt <= logTime {
		return 0
	}
	return (expiresAt - logTime) / int64(time.Millisecond)
}
