// Package shard runs the Raft groups one lockstep member hosts: the
// metadata group (group 0: shard count and members) and the lock shards
// (groups 1..N, each a core/node.Node with its own log, FSM and snapshots),
// and places every resource on its shard (core/placement). The HTTP front
// end serves a Host; the process assembly (core/lockd) and the simulator
// give it the transports and stores of each group.
package shard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/forward"
	"github.com/lockstep/lockstep/core/meta"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/placement"
	"github.com/lockstep/lockstep/core/raftadapter"
)

// Env is what one Raft group of a member runs on.
type Env struct {
	Transport raft.Transport
	Stores    raftadapter.Stores
}

// Config configures a member's groups.
type Config struct {
	ID    string
	Peers []node.Peer
	// APIAddr is the public HTTP address this member publishes in the
	// metadata group, so peers, gateways and clients can route to it.
	APIAddr string
	// Shards is the lock shard count: the one to bootstrap the cluster
	// with, or the one this member already knows. Zero learns it from the
	// metadata group.
	Shards    int
	Bootstrap bool
	// Env opens group g's transport and stores (0 is metadata).
	Env func(group uint64) (Env, error)
	// Forward is the member's end of forwarding (core/forward): every
	// group forwards to its leader through it and serves its own
	// forwarded commands there while it runs.
	Forward *forward.Forwarder
	// Node is the template of every lock shard's node config; the host
	// fills in identity, peers, bootstrap, group and Env.
	Node node.Config
	// Tune, when set, adjusts lock shard g's node config once the host has
	// filled it in: the template's hooks cannot tell shards apart, and the
	// simulator records each shard's events under its number.
	Tune func(g uint64, c *node.Config)
	// OnShards, when set, learns the shard count once it is known (the
	// process keeps it so a restart needs no flag).
	OnShards func(n int) error
	// SpreadInterval is how often a member checks that it leads no more
	// than its share of the lock shards; zero never moves leaders.
	SpreadInterval time.Duration
	Logger         *slog.Logger
	// DeadlockInterval is how often the metadata group's leader looks for
	// wait-for cycles across the lock shards (deadlock.go); zero never.
	DeadlockInterval time.Duration
}

// ErrNotReady means this member does not know the shard map yet.
var ErrNotReady = errors.New("shard map not known yet")

// Host is one member's groups.
type Host struct {
	cfg    Config
	meta   *meta.Group
	groups atomic.Pointer[[]*node.Node]
	// unserve stop serving the groups' forwarded commands.
	unserve []func()
	// started is closed once the lock shards run.
	started chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// Single wraps one lock group that is the whole cluster (no metadata
// group): tests and the single-group simulator serve it.
func Single(n *node.Node) *Host {
	h := &Host{cfg: Config{ID: n.ID(), Shards: 1}, started: make(chan struct{}), done: make(chan struct{})}
	h.groups.Store(&[]*node.Node{n})
	close(h.started)
	return h
}

// Fixed wraps lock groups that are a whole cluster, group i+1 being lock
// shard i+1 and no metadata group: tests of requests that span shards.
func Fixed(id string, groups []*node.Node) *Host {
	h := &Host{cfg: Config{ID: id, Shards: len(groups)}, started: make(chan struct{}), done: make(chan struct{})}
	h.groups.Store(&groups)
	close(h.started)
	return h
}

// Start opens the metadata group, then the lock shards as soon as their
// count is known (at once when Config.Shards is set), and publishes this
// member's addresses. It returns before any group has a leader.
func Start(cfg Config) (*Host, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Env == nil || cfg.Forward == nil {
		return nil, fmt.Errorf("%w: shard host needs Env and Forward", node.ErrConfig)
	}
	env, err := cfg.Env(0)
	if err != nil {
		return nil, err
	}
	mg, err := meta.NewGroup(meta.GroupConfig{
		ID: cfg.ID, Peers: cfg.Peers, Bootstrap: cfg.Bootstrap,
		Transport: env.Transport, Stores: env.Stores, Forwarder: cfg.Forward.For(0),
		Logger: cfg.Logger, RaftLogs: cfg.Node.RaftLogs,
		HeartbeatTimeout: cfg.Node.HeartbeatTimeout, ElectionTimeout: cfg.Node.ElectionTimeout,
	})
	if err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, meta: mg, started: make(chan struct{}), done: make(chan struct{})}
	h.unserve = append(h.unserve, cfg.Forward.Serve(0, mg))
	if cfg.Shards > 0 {
		if err := h.startShards(cfg.Shards); err != nil {
			return nil, errors.Join(err, mg.Shutdown())
		}
		close(h.started)
	}
	h.wg.Add(2)
	go h.run()
	go h.publish()
	return h, nil
}

// run starts the lock shards once their count is known and then keeps
// leaders spread.
func (h *Host) run() {
	defer h.wg.Done()
	if h.cfg.Shards == 0 {
		n := 0
		for n == 0 {
			changed := h.meta.Changed()
			if n = h.meta.State().Shards; n > 0 {
				break
			}
			select {
			case <-changed:
			case <-h.done:
				return
			}
		}
		err := h.startShards(n)
		close(h.started)
		if err != nil {
			h.cfg.Logger.Error("lock shards did not start", "node", h.cfg.ID, "err", err)
			return
		}
	}
	if h.meta != nil && h.cfg.DeadlockInterval > 0 {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.detectDeadlocks()
		}()
	}
	if h.cfg.SpreadInterval > 0 {
		h.spread()
	}
}

func (h *Host) startShards(n int) error {
	if h.cfg.OnShards != nil {
		if err := h.cfg.OnShards(n); err != nil {
			return err
		}
	}
	groups := make([]*node.Node, 0, n)
	for g := 1; g <= n; g++ {
		env, err := h.cfg.Env(uint64(g))
		if err != nil {
			h.stop(groups)
			return fmt.Errorf("shard %d: %w", g, err)
		}
		c := h.cfg.Node
		c.ID, c.Peers, c.Bootstrap, c.Group = h.cfg.ID, h.cfg.Peers, h.cfg.Bootstrap, fmt.Sprint(g)
		c.Transport, c.Stores, c.Forwarder = env.Transport, env.Stores, h.cfg.Forward.For(uint64(g))
		if h.cfg.Tune != nil {
			h.cfg.Tune(uint64(g), &c)
		}
		nd, err := node.New(c)
		if err != nil {
			h.stop(groups)
			return fmt.Errorf("shard %d: %w", g, err)
		}
		groups = append(groups, nd)
	}
	for g, nd := range groups {
		h.unserve = append(h.unserve, h.cfg.Forward.Serve(uint64(g+1), nd))
	}
	h.groups.Store(&groups)
	return nil
}

func (h *Host) stop(groups []*node.Node) {
	for _, g := range groups {
		_ = g.Shutdown()
	}
}

// publishRetry paces the first publication and the shard count proposal
// while the metadata group elects its first leader.
const publishRetry = 100 * time.Millisecond

// publish fixes the shard count (bootstrapping members only) and records
// this member's addresses in the metadata group, retrying until it lands.
func (h *Host) publish() {
	defer h.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var self node.Peer
	for _, p := range h.cfg.Peers {
		if p.ID == h.cfg.ID {
			self = p
		}
	}
	cmds := []meta.Command{{Op: meta.OpPublish, Member: meta.Member{ID: h.cfg.ID, RaftAddr: self.RaftAddr, APIAddr: h.cfg.APIAddr}}}
	if h.cfg.Bootstrap && h.cfg.Shards > 0 {
		cmds = append([]meta.Command{{Op: meta.OpSetShards, Shards: h.cfg.Shards}}, cmds...)
	}
	for _, cmd := range cmds {
		for {
			err := h.meta.Propose(ctx, cmd)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, meta.ErrShardsFixed) {
				h.cfg.Logger.Error("this member's shard count differs from the cluster's", "node", h.cfg.ID, "err", err)
				break
			}
			time.Sleep(publishRetry)
		}
	}
}

// ID is this member's id.
func (h *Host) ID() string { return h.cfg.ID }

// Meta is the metadata group replica (nil for Single).
func (h *Host) Meta() *meta.Group { return h.meta }

// Started is closed once the lock shards run.
func (h *Host) Started() <-chan struct{} { return h.started }

// Groups lists the lock shards in shard order (shard i+1 at index i), or
// nil before they start.
func (h *Host) Groups() []*node.Node {
	if g := h.groups.Load(); g != nil {
		return *g
	}
	return nil
}

// MapVersion is the version of the shard map this member routes by (0 for
// Single, which has no metadata group).
func (h *Host) MapVersion() uint64 {
	if h.meta == nil {
		return 0
	}
	return h.meta.State().Version
}

// For returns the lock shard that serves resource and its number.
func (h *Host) For(resource string) (*node.Node, placement.Shard, error) {
	groups := h.Groups()
	if len(groups) == 0 {
		return nil, 0, fmt.Errorf("%w: %w", node.ErrUnavailable, ErrNotReady)
	}
	s := placement.Of(resource, len(groups))
	return groups[s-1], s, nil
}

// Group returns lock shard s (1-based), if this member runs it.
func (h *Host) Group(s int) (*node.Node, bool) {
	groups := h.Groups()
	if s < 1 || s > len(groups) {
		return nil, false
	}
	return groups[s-1], true
}

// Shutdown stops every group.
func (h *Host) Shutdown() error {
	var err error
	h.once.Do(func() {
		close(h.done)
		h.wg.Wait()
		for _, stop := range h.unserve {
			stop()
		}
		for _, g := range h.Groups() {
			err = errors.Join(err, g.Shutdown())
		}
		if h.meta != nil {
			err = errors.Join(err, h.meta.Shutdown())
		}
	})
	return err
}

// APIAddr returns member id's public address: the one it published in the
// metadata group, else the one its peer entry names ("" if neither).
func (h *Host) APIAddr(id string) string {
	if h.meta != nil {
		st := h.meta.State()
		if m, ok := st.Member(id); ok && m.APIAddr != "" {
			return m.APIAddr
		}
	}
	peers := h.cfg.Peers
	if groups := h.Groups(); len(peers) == 0 && len(groups) > 0 {
		peers = groups[0].Peers()
	}
	for _, p := range peers {
		if p.ID == id {
			return p.HTTPAddr
		}
	}
	return ""
}

// Leader is the leader of the metadata group, or of the only group of a
// Single host.
func (h *Host) Leader() string {
	if h.meta != nil {
		return h.meta.Leader()
	}
	if groups := h.Groups(); len(groups) > 0 {
		leader, _ := groups[0].Leader()
		return leader.ID
	}
	return ""
}
