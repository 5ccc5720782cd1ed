// Package node runs the lock state machine on a Raft group: it turns API
// calls into log entries (stamped with the leader's monotonic clock),
// forwards them to the leader from any member, applies committed entries,
// wakes blocked waiters, and proposes expirations when leases fall due.
//
// The same Node runs on real TCP with durable stores (core/lockd, for
// cmd/lockd) or on the simulated network with in-memory stores (sim/),
// chosen by Config.
package node

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/raftadapter"
	"github.com/lockstep/lockstep/core/tracing"
)

// Clock is a node's monotonic clock: a reading since an arbitrary origin.
// Only the leader's readings reach the log, as lease time.
type Clock interface {
	Now() time.Duration
}

// Peer is one member of the group.
type Peer struct {
	ID       string
	RaftAddr string
	HTTPAddr string
}

// Config configures one node. Zero durations take the defaults below.
type Config struct {
	ID       string
	Peers    []Peer // all members including this one
	Lock     lock.Config
	Clock    Clock
	Logger   *slog.Logger
	RaftLogs io.Writer // hashicorp/raft's own log output; nil discards

	// Bootstrap forms the cluster from Peers if this node has no state yet.
	Bootstrap bool

	Transport raft.Transport
	Stores    raftadapter.Stores
	Forwarder Forwarder

	// LeaseIDs supplies lease id randomness; nil uses crypto/rand. The
	// simulator passes a seeded source.
	LeaseIDs func() lock.LeaseID

	// TickInterval is how often the leader checks for due expirations.
	TickInterval time.Duration
	// ProposeTimeout bounds a single raft.Apply.
	ProposeTimeout time.Duration

	// Raft timing; zero keeps lockstep's defaults (tuned for LAN/loopback).
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	SnapshotThreshold  uint64
	// UnreachableAfter is how long the leader may fail to reach a member
	// before reporting it unreachable and cancelling, instead of granting,
	// the queued requests that member is waiting on.
	UnreachableAfter time.Duration
	SnapshotInterval time.Duration
	TrailingLogs     uint64
	// Raft's batching knobs, measured one at a time for issue 16 (see
	// EXPERIMENTS.md, "Commit-path levers"); zero keeps lockstep's defaults.
	MaxAppendEntries int
	CommitTimeout    time.Duration
	// NoBatchApply turns off raft's BatchApplyCh (on by default).
	NoBatchApply bool
	// ProposeDepth is how many entries the leader keeps in Raft at once;
	// commands arriving while that many are in flight go together in the
	// next entry (proposer.go). Zero keeps DefaultProposeDepth.
	ProposeDepth int
	// NoLeaderAfter is how long a command may find no leader to take it
	// before the caller is told the group is unavailable.
	NoLeaderAfter time.Duration

	// Group names the lock group in errors and metrics ("1" for shard 1).
	Group string

	// Events, when set, sees every state machine event this node applies,
	// in apply order, on the apply path (it must not block): lockd's gRPC
	// change feed.
	Events func(lock.Event)
	// Hooks are the testbed's probes and bug mode (hooks.go); nil in
	// production.
	Hooks *Hooks
	// Stages, when set, times each request's steps through this node (see
	// Stage); nil in the simulator and tests.
	Stages StageObserver
	// WatchHistory is how many recent events the node keeps for watchers
	// that resume (watch.go); zero keeps DefaultWatchHistory.
	WatchHistory int
	// Tracer, when set, records spans of proposals, forwards and Raft
	// applies (core/tracing); nil is off.
	Tracer *tracing.Tracer
}

// ErrConfig marks an unusable configuration.
var ErrConfig = errors.New("invalid node config")

func (c *Config) setDefaults() {
	if c.Lock == (lock.Config{}) {
		c.Lock = lock.DefaultConfig()
	}
	c.Lock.Bugs = c.hooks().Bug.lockBugs()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.RaftLogs == nil {
		c.RaftLogs = io.Discard
	}
	if c.LeaseIDs == nil {
		c.LeaseIDs = lock.NewLeaseID
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.TickInterval, 20*time.Millisecond)
	def(&c.ProposeTimeout, 5*time.Second)
	def(&c.HeartbeatTimeout, 500*time.Millisecond)
	def(&c.ElectionTimeout, 500*time.Millisecond)
	def(&c.LeaderLeaseTimeout, 250*time.Millisecond)
	def(&c.SnapshotInterval, 30*time.Second)
	def(&c.UnreachableAfter, 2*time.Second)
	def(&c.NoLeaderAfter, time.Second)
	if c.WatchHistory <= 0 {
		c.WatchHistory = DefaultWatchHistory
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 16384
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.MaxAppendEntries == 0 {
		c.MaxAppendEntries = 512
	}
	def(&c.CommitTimeout, 5*time.Millisecond)
	if c.ProposeDepth <= 0 {
		c.ProposeDepth = DefaultProposeDepth
	}
}

// DefaultProposeDepth is Config.ProposeDepth's default.
const DefaultProposeDepth = 1

// DefaultConfig returns a Config with lockstep's default for every option
// that has one; the caller adds ID, Peers, Clock, Transport, Stores and
// Forwarder. New fills any zero option the same way.
func DefaultConfig() Config {
	var c Config
	c.setDefaults()
	return c
}

// Validate reports a config New cannot run with.
func (c *Config) Validate() error {
	if err := c.hooks().Bug.validate(); err != nil {
		return err
	}
	if c.ID == "" {
		return fmt.Errorf("%w: ID is required", ErrConfig)
	}
	if c.Clock == nil || c.Transport == nil || c.Forwarder == nil {
		return fmt.Errorf("%w: Clock, Transport and Forwarder are required", ErrConfig)
	}
	if c.Stores.Log == nil || c.Stores.Stable == nil || c.Stores.Snapshot == nil {
		return fmt.Errorf("%w: Stores are required", ErrConfig)
	}
	found := false
	for _, p := range c.Peers {
		if p.ID == "" || p.RaftAddr == "" {
			return fmt.Errorf("%w: peer %+v needs an id and a raft address", ErrConfig, p)
		}
		found = found || p.ID == c.ID
	}
	if !found {
		return fmt.Errorf("%w: Peers must include this node (%s)", ErrConfig, c.ID)
	}
	return c.Lock.Validate()
}

func (c *Config) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.ID)
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	rc.ElectionTimeout = c.ElectionTimeout
	rc.LeaderLeaseTimeout = c.LeaderLeaseTimeout
	rc.CommitTimeout = c.CommitTimeout
	rc.SnapshotThreshold = c.SnapshotThreshold
	rc.SnapshotInterval = c.SnapshotInterval
	rc.TrailingLogs = c.TrailingLogs
	// Batching proposals is what makes fsync-per-write affordable: one disk
	// flush commits every command that queued up behind the previous one.
	rc.BatchApplyCh = !c.NoBatchApply
	rc.MaxAppendEntries = c.MaxAppendEntries
	rc.Logger = newHCLogger(c.ID, c.RaftLogs)
	return rc
}

// newHCLogger adapts raft's logging to w, warnings and worse only.
func newHCLogger(id string, w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "raft-" + id, Output: w, Level: hclog.Warn})
}
