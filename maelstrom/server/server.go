// Package server is lockstep as a Maelstrom node: the lin-kv workload on a
// replicated register and the lock workload on the real lock node
// (core/node), each in its own hashicorp/raft group. Both groups' Raft
// RPCs (core/raftlink) and forwarded commands (core/forward) travel on one
// core/link made of Maelstrom messages (maelstrom.Link), as lockd's do on
// TCP. Any node answers any request; followers forward commands to the
// leader.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/forward"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/raftlink"
	"github.com/lockstep/lockstep/maelstrom"
)

// Raft group names, for logs.
const (
	groupKV   = "kv"
	groupLock = "lock"
)

// raftGroups numbers the groups on the link, for Raft and forwarding.
var raftGroups = map[string]uint64{groupKV: 1, groupLock: 2}

// Timing is the Raft timing of both groups.
//
// The defaults assume Maelstrom-like message latency: tens of ms per hop
// on average, with tails to a few hundred ms (the runner's exponential
// latency, or maelstrom's --latency 100). A 1 s heartbeat timeout sends a
// heartbeat every 100 ms and tolerates several lost or slow ones before a
// follower starts an election, and a 500 ms leader lease lets a leader cut
// off by a partition step down within about a second. lockstep's LAN
// defaults (500/500/250 ms) flap under such tails.
type Timing struct {
	Heartbeat   time.Duration
	Election    time.Duration
	LeaderLease time.Duration
	// RPCTimeout bounds one Raft RPC round trip (raftlink.Config.Timeout):
	// a message Maelstrom drops is noticed only then.
	RPCTimeout time.Duration
	// SnapshotThreshold, TrailingLogs and SnapshotInterval are small in
	// tests that need InstallSnapshot; zero keeps hashicorp/raft's values.
	SnapshotThreshold uint64
	TrailingLogs      uint64
	SnapshotInterval  time.Duration
	// RaftLogs receives hashicorp/raft's warnings; nil discards them.
	RaftLogs io.Writer
}

// DefaultTiming is the timing the node binary uses.
func DefaultTiming() Timing {
	return Timing{Heartbeat: time.Second, Election: time.Second, LeaderLease: 500 * time.Millisecond, RPCTimeout: time.Second}
}

func (t *Timing) setDefaults() {
	def := DefaultTiming()
	if t.Heartbeat == 0 {
		t.Heartbeat = def.Heartbeat
	}
	if t.Election == 0 {
		t.Election = def.Election
	}
	if t.LeaderLease == 0 {
		t.LeaderLease = def.LeaderLease
	}
	if t.RPCTimeout == 0 {
		t.RPCTimeout = def.RPCTimeout
	}
	if t.SnapshotThreshold == 0 {
		t.SnapshotThreshold = 8192
	}
	if t.TrailingLogs == 0 {
		t.TrailingLogs = 10240
	}
	if t.SnapshotInterval == 0 {
		t.SnapshotInterval = 30 * time.Second
	}
	if t.RaftLogs == nil {
		t.RaftLogs = io.Discard
	}
}

// Options configures a Server.
type Options struct {
	Logger *slog.Logger
	Timing Timing
	// RequestTimeout bounds how long a client request may wait for a
	// leader and its commit (plus an acquire's wait). It is shorter than a
	// client's own timeout, so that a request that never reached a leader
	// gets a definite temporarily-unavailable instead of no answer.
	RequestTimeout time.Duration
	// Bug turns on one of core/node's deliberate mistakes, to show the
	// runner catching it; "" in normal use.
	Bug node.Bug
}

// DefaultRequestTimeout is Options.RequestTimeout's default.
const DefaultRequestTimeout = 2 * time.Second

// group is one Raft group of this process; as a forward.Group it takes
// the commands the other members forward to it while it leads.
type group interface {
	forward.Group
	shutdown() error
}

// Server registers the workloads' handlers on a maelstrom.Node. Both Raft
// groups start at init, so their first election runs while the harness
// starts the other nodes, not in the first client operation's time: a
// group started by that operation made it wait an election (about 2 s
// with the default timing). The price is the idle group's heartbeats in a
// run of the other workload.
type Server struct {
	link *maelstrom.Link
	fwd  *forward.Forwarder
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	groups map[string]group
	// unserve stops forwarding to the started groups.
	unserve []func()
	closed  bool
}

// ErrClosed answers requests that arrive after Close.
var ErrClosed = errors.New("server closed")

// New registers the server's handlers on n.
func New(n *maelstrom.Node, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	opts.Timing.setDefaults()
	l := maelstrom.NewLink(n)
	s := &Server{link: l, fwd: forward.New(l, nil), opts: opts, log: opts.Logger, groups: make(map[string]group)}
	n.OnInit(s.start)
	n.Handle("read", s.handleRead)
	n.Handle("write", s.handleWrite)
	n.Handle("cas", s.handleCAS)
	n.Handle("acquire", s.handleAcquire)
	n.Handle("release", s.handleRelease)
	n.Handle("renew", s.handleRenew)
	n.Handle("status", s.handleStatus)
	return s
}

// Close shuts every started group down.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	groups, unserve := s.groups, s.unserve
	s.groups, s.unserve = map[string]group{}, nil
	s.mu.Unlock()
	for _, stop := range unserve {
		stop()
	}
	var errs []error
	for name, g := range groups {
		if err := g.shutdown(); err != nil {
			errs = append(errs, fmt.Errorf("shut down %s group: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// start starts both Raft groups when init arrives. A failure fails init:
// a node without its groups cannot serve.
func (s *Server) start(_ context.Context, id string, peers []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w: %w", node.ErrUnavailable, ErrClosed)
	}
	if len(s.groups) > 0 {
		return maelstrom.NewError(maelstrom.MalformedRequest, "init received twice")
	}
	cfg := raftlink.DefaultConfig(id)
	cfg.Timeout = s.opts.Timing.RPCTimeout
	cfg.QuietWithin = min(cfg.QuietWithin, cfg.Timeout)
	links, err := raftlink.New(s.link, cfg)
	if err != nil {
		return err
	}
	for _, name := range []string{groupKV, groupLock} {
		g, err := s.startGroup(links, name, id, peers)
		if err != nil {
			for _, stop := range s.unserve {
				stop()
			}
			for _, started := range s.groups {
				_ = started.shutdown()
			}
			s.groups, s.unserve = map[string]group{}, nil
			return err
		}
		s.groups[name] = g
		s.unserve = append(s.unserve, s.fwd.Serve(raftGroups[name], g))
	}
	return nil
}

// startGroup starts the named group of this node.
func (s *Server) startGroup(links *raftlink.Net, name, id string, peers []string) (group, error) {
	t := s.opts.Timing
	trans, err := links.Transport(raftGroups[name])
	if err != nil {
		return nil, fmt.Errorf("start %s group: %w", name, err)
	}
	fwd := s.fwd.For(raftGroups[name])
	var g group
	switch name {
	case groupKV:
		g, err = newKVReplica(id, peers, trans, fwd, t, s.opts.RequestTimeout)
	case groupLock:
		g, err = newLockGroup(id, peers, trans, fwd, s.opts)
	default:
		err = fmt.Errorf("unknown raft group %q", name)
	}
	if err != nil {
		_ = trans.Close()
		return nil, fmt.Errorf("start %s group: %w", name, err)
	}
	s.log.Info("raft group started", "group", name, "node", id, "peers", peers)
	return g, nil
}

// group returns the named group, started at init.
func (s *Server) group(name string) (group, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: %w", node.ErrUnavailable, ErrClosed)
	}
	g, ok := s.groups[name]
	if !ok {
		return nil, fmt.Errorf("%w: not initialized", node.ErrUnavailable)
	}
	return g, nil
}
