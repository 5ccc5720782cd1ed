package meta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// GroupConfig configures a member's replica of the metadata group.
type GroupConfig struct {
	ID string
	// Peers are every member (the metadata group is on all of them).
	Peers     []node.Peer
	Bootstrap bool
	Transport raft.Transport
	Stores    node.Stores
	// Forwarder carries a command from a follower to the group's leader.
	Forwarder node.Forwarder
	Logger    *slog.Logger
	RaftLogs  io.Writer
	// Raft timing; zero keeps the lock groups' defaults.
	HeartbeatTimeout time.Duration
	ElectionTimeout  time.Duration
}

// Group runs State on Raft. Metadata changes are rare (bootstrap and each
// member's start), so every command is a JSON entry and every read is
// local: a router with an old map learns the newer one from a peer.
type Group struct {
	cfg  GroupConfig
	raft *raft.Raft
	fsm  *fsm
}

// NewGroup starts the metadata replica, bootstrapping the group from Peers
// when asked and nothing is stored yet.
func NewGroup(cfg GroupConfig) (*Group, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RaftLogs == nil {
		cfg.RaftLogs = io.Discard
	}
	if cfg.HeartbeatTimeout == 0 {
		cfg.HeartbeatTimeout = 500 * time.Millisecond
	}
	if cfg.ElectionTimeout == 0 {
		cfg.ElectionTimeout = 500 * time.Millisecond
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout, rc.ElectionTimeout = cfg.HeartbeatTimeout, cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.HeartbeatTimeout / 2
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft-meta-" + cfg.ID, Output: cfg.RaftLogs, Level: hclog.Warn})
	f := &fsm{changed: make(chan struct{})}
	if cfg.Bootstrap {
		has, err := raft.HasExistingState(cfg.Stores.Log, cfg.Stores.Stable, cfg.Stores.Snapshot)
		if err != nil {
			return nil, fmt.Errorf("meta: inspect raft state: %w", err)
		}
		if !has {
			var servers []raft.Server
			for _, p := range cfg.Peers {
				servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
			}
			err := raft.BootstrapCluster(rc, cfg.Stores.Log, cfg.Stores.Stable, cfg.Stores.Snapshot, cfg.Transport, raft.Configuration{Servers: servers})
			if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
				return nil, fmt.Errorf("meta: bootstrap: %w", err)
			}
		}
	}
	r, err := raft.NewRaft(rc, f, node.KeepCompactionEdge(cfg.Stores.Log), cfg.Stores.Stable, cfg.Stores.Snapshot, node.GroupTransport(cfg.Transport, 0))
	if err != nil {
		return nil, fmt.Errorf("meta: start raft: %w", err)
	}
	return &Group{cfg: cfg, raft: r, fsm: f}, nil
}

// State returns the metadata this replica has applied.
func (g *Group) State() State { return g.fsm.state() }

// Changed returns a channel closed at the next applied change.
func (g *Group) Changed() <-chan struct{} { return g.fsm.next() }

// IsLeader reports whether this replica leads the metadata group.
func (g *Group) IsLeader() bool { return g.raft.State() == raft.Leader }

// Leader returns the metadata group's leader id as this replica knows it.
func (g *Group) Leader() string {
	_, id := g.raft.LeaderWithID()
	return string(id)
}

// retryDelay paces Propose while no leader is known.
const retryDelay = 20 * time.Millisecond

// Propose applies cmd through the group's leader, from any member. Every
// command is idempotent, so retrying one whose outcome is unknown is safe.
func (g *Group) Propose(ctx context.Context, cmd Command) error {
	body, err := json.Marshal(cmd)
	if err != nil {
		return fmt.Errorf("meta: encode: %w", err)
	}
	for {
		var err error
		if g.IsLeader() {
			err = g.applyLocal(ctx, body)
		} else if leader := g.Leader(); leader != "" {
			err = g.forward(ctx, leader, body)
		} else {
			err = node.ErrUnavailable
		}
		if err == nil || errors.Is(err, ErrShardsFixed) || errors.Is(err, errInvalid) {
			return err
		}
		t := time.NewTimer(retryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("meta: %w (last: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

func (g *Group) forward(ctx context.Context, leader string, body []byte) error {
	for _, p := range g.cfg.Peers {
		if p.ID == leader {
			out, err := g.cfg.Forwarder.Forward(ctx, p, body)
			if err != nil {
				return err
			}
			return decodeReply(out)
		}
	}
	return fmt.Errorf("%w: leader %s is not a configured peer", node.ErrUnavailable, leader)
}

func (g *Group) applyLocal(ctx context.Context, body []byte) error {
	timeout := 5 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return fmt.Errorf("%w: deadline passed", node.ErrUnavailable)
	}
	f := g.raft.Apply(body, timeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			return node.ErrNotLeader
		}
		return fmt.Errorf("%w: %w", node.ErrUnavailable, err)
	}
	if err, _ := f.Response().(error); err != nil {
		return err
	}
	return nil
}

// reply is a forwarded command's answer: the apply error, if any.
type reply struct {
	Error string `json:"error,omitempty"`
	Fixed bool   `json:"fixed,omitempty"`
}

func decodeReply(b []byte) error {
	var r reply
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("meta: leader reply: %w", err)
	}
	switch {
	case r.Fixed:
		return fmt.Errorf("%w: %s", ErrShardsFixed, r.Error)
	case r.Error != "":
		return fmt.Errorf("%w: %s", errInvalid, r.Error)
	}
	return nil
}

// errInvalid is a command the state refused: retrying cannot help.
var errInvalid = errors.New("meta: command refused")

// ServeForward applies a command another member forwarded (core/forward)
// and answers in the reply format decodeReply reads; it refuses with
// node.ErrNotLeader unless this replica leads.
func (g *Group) ServeForward(ctx context.Context, body []byte) ([]byte, error) {
	var cmd Command
	if err := json.Unmarshal(body, &cmd); err != nil {
		return nil, fmt.Errorf("%w: metadata command: %w", lock.ErrInvalid, err)
	}
	if !g.IsLeader() {
		return nil, node.ErrNotLeader
	}
	err := g.applyLocal(ctx, body)
	var out reply
	switch {
	case errors.Is(err, ErrShardsFixed):
		out = reply{Error: err.Error(), Fixed: true}
	case errors.Is(err, errInvalid):
		out = reply{Error: err.Error()}
	case err != nil:
		return nil, err
	}
	return json.Marshal(out)
}

// Snapshot snapshots the replica now (tests of restore, operators).
func (g *Group) Snapshot() error { return g.raft.Snapshot().Error() }

// Shutdown stops the replica.
func (g *Group) Shutdown() error {
	err := g.raft.Shutdown().Error()
	if c, ok := g.cfg.Transport.(raft.WithClose); ok {
		err = errors.Join(err, c.Close())
	}
	if g.cfg.Stores.Close != nil {
		err = errors.Join(err, g.cfg.Stores.Close())
	}
	return err
}

// fsm applies Commands to State and wakes whoever waits for a change.
type fsm struct {
	mu      sync.Mutex
	st      State
	changed chan struct{}
}

func (f *fsm) state() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.Clone()
}

func (f *fsm) next() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fsm) Apply(l *raft.Log) interface{} {
	if l.Type != raft.LogCommand {
		return nil
	}
	var cmd Command
	if err := json.Unmarshal(l.Data, &cmd); err != nil {
		return fmt.Errorf("%w: entry %d: %w", errInvalid, l.Index, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	before := f.st.Version
	if err := f.st.Apply(cmd); err != nil {
		if errors.Is(err, ErrShardsFixed) {
			return err
		}
		return fmt.Errorf("%w: %w", errInvalid, err)
	}
	if f.st.Version != before {
		close(f.changed)
		f.changed = make(chan struct{})
	}
	return nil
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.st.encode()
	if err != nil {
		return nil, err
	}
	return snapshot(b), nil
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("meta: read snapshot: %w", err)
	}
	st, err := decode(bytes.TrimSpace(b))
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = st
	close(f.changed)
	f.changed = make(chan struct{})
	return nil
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("meta: write snapshot: %w", err)
	}
	return sink.Close()
}

func (s snapshot) Release() {}
