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

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/forward"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/raftadapter"
)

// GroupConfig configures a member's replica of the metadata group.
type GroupConfig struct {
	ID string
	// Peers are every member (the metadata group is on all of them).
	Peers     []node.Peer
	Bootstrap bool
	Transport raft.Transport
	Stores    raftadapter.Stores
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

var _ forward.Group = (*Group)(nil)

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
	r, err := raft.NewRaft(rc, f, raftadapter.KeepCompactionEdge(cfg.Stores.Log), cfg.Stores.Stable, cfg.Stores.Snapshot, raftadapter.GroupTransport(cfg.Transport, 0))
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

// LeaderContact is how long ago this replica last heard from the group's
// leader: 0 on the leader itself (which steps down within its leader
// lease once it loses a quorum); ok is false when it never has since it
// started.
func (g *Group) LeaderContact() (since time.Duration, ok bool) {
	if g.IsLeader() {
		return 0, true
	}
	last := g.raft.LastContact()
	if last.IsZero() {
		return 0, false
	}
	return time.Since(last), true
}

// retryDelay paces Propose while no leader is known.
const retryDelay = 20 * time.Millisecond

// Propose applies cmd through the group's leader, from any member, and
// returns once this replica has applied it too: what a member answers
// for is visible on it at once (read-your-writes), though another member
// may still trail by a commit round. Every command is idempotent, so
// retrying one whose outcome is unknown is safe; a retried delete that
// finds its token gone was answered by its own earlier attempt.
func (g *Group) Propose(ctx context.Context, cmd Command) error {
	body, err := json.Marshal(cmd)
	if err != nil {
		return fmt.Errorf("meta: encode: %w", err)
	}
	mayHaveApplied := false
	for {
		var index uint64
		var err error
		attempted := true
		if g.IsLeader() {
			index, err = g.applyLocal(ctx, body)
		} else if leader := g.Leader(); leader != "" {
			index, err = g.forward(ctx, leader, body)
		} else {
			attempted, err = false, node.ErrUnavailable
		}
		switch {
		case err == nil:
			return g.awaitApplied(ctx, index)
		case mayHaveApplied && cmd.Op == OpACLDeleteToken && errors.Is(err, acl.ErrNotFound):
			return g.awaitApplied(ctx, index)
		case errors.Is(err, ErrShardsFixed) || errors.Is(err, errInvalid):
			return err
		}
		// Only a refusal before the entry reached a log (a member that
		// does not lead, a forward surely not sent, raft refusing to
		// enqueue) proves an attempt changed nothing: a leader that lost
		// its leadership, or a lost answer, may still have committed it.
		mayHaveApplied = mayHaveApplied || attempted && !errors.Is(err, node.ErrNotLeader) && !errors.Is(err, node.ErrUnavailable)
		t := time.NewTimer(retryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			if mayHaveApplied {
				// The last error may say "unavailable", but an earlier
				// attempt may have committed: the outcome is unknown.
				return fmt.Errorf("meta: %w: %w (last: %v)", node.ErrIndeterminate, ctx.Err(), err)
			}
			return fmt.Errorf("meta: %w (last: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// awaitApplied waits, within ctx, until this replica applied the entry
// at index. A committed change that has not reached this replica by the
// caller's deadline is neither refused nor surely visible here: the
// answer says so (outcome unknown), and a retry is safe.
func (g *Group) awaitApplied(ctx context.Context, index uint64) error {
	if err := g.fsm.waitApplied(ctx, index); err != nil {
		return fmt.Errorf("%w: the metadata change is committed (log index %d) but this member has not applied it yet: %w",
			node.ErrIndeterminate, index, err)
	}
	return nil
}

func (g *Group) forward(ctx context.Context, leader string, body []byte) (uint64, error) {
	for _, p := range g.cfg.Peers {
		if p.ID == leader {
			out, err := g.cfg.Forwarder.Forward(ctx, p, body)
			if err != nil {
				return 0, err
			}
			return decodeReply(out)
		}
	}
	return 0, fmt.Errorf("%w: leader %s is not a configured peer", node.ErrUnavailable, leader)
}

// applyLocal applies body on this replica, the leader, and returns the
// index it applied at (also for a refused command: it is an entry too).
func (g *Group) applyLocal(ctx context.Context, body []byte) (uint64, error) {
	timeout := 5 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return 0, fmt.Errorf("%w: deadline passed", node.ErrUnavailable)
	}
	f := g.raft.Apply(body, timeout)
	if err := f.Error(); err != nil {
		return 0, node.ApplyError(err)
	}
	if err, _ := f.Response().(error); err != nil {
		return f.Index(), err
	}
	return f.Index(), nil
}

// reply is a forwarded command's answer: the index the leader applied it
// at, and the refusal, if any (its sentence and kind).
type reply struct {
	Error string `json:"error,omitempty"`
	Fixed bool   `json:"fixed,omitempty"`
	// Kind names a refusal's ACL kind (refusalKinds); empty for others.
	Kind string `json:"kind,omitempty"`
	// Index is where the leader applied the command: the follower
	// answers its caller once it applied that entry too.
	Index uint64 `json:"index,omitempty"`
}

// refusalKinds are the ACL refusals a reply names, so the follower's
// caller gets the same answer as the leader's (404, 409, 400).
var refusalKinds = map[string]error{
	"not_found":           acl.ErrNotFound,
	"failed_precondition": acl.ErrFailedPrecondition,
	"invalid":             acl.ErrInvalid,
}

// replyOf is the reply to a forwarded command the leader applied at
// index with err: nil or a refusal (anything else is a forward error).
func replyOf(index uint64, err error) reply {
	out := reply{Index: index}
	if err == nil {
		return out
	}
	out.Error, out.Fixed = err.Error(), errors.Is(err, ErrShardsFixed)
	for name, kind := range refusalKinds {
		if errors.Is(err, kind) {
			out.Kind = name
		}
	}
	return out
}

func decodeReply(b []byte) (uint64, error) {
	var r reply
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("meta: leader reply: %w", err)
	}
	switch {
	case r.Fixed:
		return r.Index, &refusedError{msg: r.Error, kinds: []error{ErrShardsFixed}}
	case r.Error != "":
		kinds := []error{errInvalid}
		if kind, ok := refusalKinds[r.Kind]; ok {
			kinds = append(kinds, kind)
		}
		return r.Index, &refusedError{msg: r.Error, kinds: kinds}
	}
	return r.Index, nil
}

// errInvalid is a command the state refused: retrying cannot help.
var errInvalid = errors.New("meta: command refused")

// refusedError is a command the state refused, applied here or answered
// by the leader: its text is the state's own sentence, said once, and it
// matches errInvalid (never retried) and the state's error kinds.
type refusedError struct {
	msg   string
	kinds []error
}

func (e *refusedError) Error() string   { return e.msg }
func (e *refusedError) Unwrap() []error { return e.kinds }

// refused marks err, a state's refusal, as one.
func refused(err error) error {
	return &refusedError{msg: err.Error(), kinds: []error{errInvalid, err}}
}

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
	index, err := g.applyLocal(ctx, body)
	if err != nil && !errors.Is(err, ErrShardsFixed) && !errors.Is(err, errInvalid) {
		return nil, err
	}
	return json.Marshal(replyOf(index, err))
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

// fsm applies Commands to State and wakes whoever waits for a change or
// for an entry to apply.
type fsm struct {
	mu      sync.Mutex
	st      State
	changed chan struct{}
	// index is the last command entry applied (or restored from a
	// snapshot); advanced is closed, and replaced, when it grows.
	index    uint64
	advanced chan struct{}
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

// advance records that the entries up to index are applied; f.mu held.
func (f *fsm) advance(index uint64) {
	if index <= f.index {
		return
	}
	f.index = index
	if f.advanced != nil {
		close(f.advanced)
		f.advanced = nil
	}
}

// waitApplied returns once the entry at index is applied here, or with
// ctx's error.
func (f *fsm) waitApplied(ctx context.Context, index uint64) error {
	for {
		f.mu.Lock()
		if f.index >= index {
			f.mu.Unlock()
			return nil
		}
		if f.advanced == nil {
			f.advanced = make(chan struct{})
		}
		advanced := f.advanced
		f.mu.Unlock()
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *fsm) Apply(l *raft.Log) interface{} {
	if l.Type != raft.LogCommand {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// A refused command is applied too: nothing changed, up to here.
	defer f.advance(l.Index)
	var cmd Command
	if err := json.Unmarshal(l.Data, &cmd); err != nil {
		return refused(fmt.Errorf("entry %d: %w", l.Index, err))
	}
	before := f.st.Version
	if err := f.st.Apply(cmd); err != nil {
		if errors.Is(err, ErrShardsFixed) {
			return err
		}
		return refused(err)
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
	b, err := encode(f.st, f.index)
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
	st, index, err := decode(bytes.TrimSpace(b))
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = st
	f.advance(index)
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
