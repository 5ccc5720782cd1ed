package scenarios

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/lockstep/lockstep/core/forward"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/raftlink"
	"github.com/lockstep/lockstep/core/shard"
)

// Sharded members on the simulated network, assembled as core/lockd
// assembles a process: one core/shard.Host per member, whose groups (the
// metadata group 0 and lock shards 1..N) share the member's network
// identity and its one link (sim.MemberLink): each group's Raft transport
// comes from the member's raftlink.Net over it, so a partition, pause or
// crash of the member hits every group alike, and forwarded commands
// travel over it with core/forward, the code lockd runs.

// spreadInterval is how often a simulated member checks it leads no more
// than its share of the lock shards (lockd's default is 2 s; shorter here
// so leaders spread again between a scenario's faults).
const spreadInterval = 500 * time.Millisecond

// replica names member's replica of group g in the recorder, which
// numbers each replica's events per log index (indexes repeat across
// groups).
func replica(member string, g uint64) string { return fmt.Sprintf("%s/g%d", member, g) }

// startHost starts member m's groups and serves its API and forward ports.
func (c *Cluster) startHost(m *member, bootstrap bool) error {
	for g := 1; g <= c.shards; g++ {
		stores := c.groupStores(m, uint64(g))
		c.rec.restarted(replica(m.id, uint64(g)), g, &stores)
	}
	// Env runs within shard.Start only: the shard count is given, so no
	// group opens later.
	ml := c.net.NewMemberLink(m.id)
	links, err := raftlink.New(ml, c.net.RaftConfig(m.id))
	if err != nil {
		return err
	}
	var transports []*raftlink.Transport
	env := func(g uint64) (shard.Env, error) {
		tr, err := links.Transport(g)
		if err != nil {
			return shard.Env{}, fmt.Errorf("group %d transport: %w", g, err)
		}
		transports = append(transports, tr)
		return shard.Env{Transport: tr, Stores: c.groupStores(m, g)}, nil
	}
	h, err := shard.Start(shard.Config{
		ID: m.id, Peers: m.peers, APIAddr: net.JoinHostPort(m.id, apiPort), Shards: c.shards,
		Bootstrap: bootstrap, Env: env, Forward: forward.New(ml, nil), Node: c.nodeTemplate(m), Tune: c.hooks(m),
		SpreadInterval: spreadInterval, DeadlockInterval: c.deadlockInterval,
	})
	if err != nil {
		for _, tr := range transports {
			_ = tr.Close()
		}
		return fmt.Errorf("start %s: %w", m.id, err)
	}
	api, err := memberAPI(h)
	if err != nil {
		_ = h.Shutdown()
		return fmt.Errorf("start %s: %w", m.id, err)
	}
	c.net.HandleMember(m.id, map[string]http.Handler{apiPort: api}, ml)
	for g := 1; g <= c.shards; g++ {
		if n, ok := h.Group(g); ok {
			c.rec.started(replica(m.id, uint64(g)), n.Incarnation())
		}
	}
	c.mu.Lock()
	m.host, m.transports = h, transports
	c.mu.Unlock()
	return nil
}

// nodeTemplate is what every lock shard of m shares.
func (c *Cluster) nodeTemplate(m *member) node.Config {
	return node.Config{
		Clock: m.clock, LeaseIDs: m.leaseID,
		SnapshotThreshold: c.snap.Threshold, TrailingLogs: c.snap.TrailingLogs,
		SnapshotInterval: time.Duration(c.snap.IntervalMs) * time.Millisecond,
	}
}

// hooks gives each lock shard of m the run's bug mode and its recorder
// probes under its shard number.
func (c *Cluster) hooks(m *member) func(uint64, *node.Config) {
	return func(g uint64, cfg *node.Config) {
		cfg.Hooks = c.nodeHooks(replica(m.id, g), int(g))
	}
}

// nodeHooks are the run's bug mode and the recorder's probes for replica
// name of group.
func (c *Cluster) nodeHooks(name string, group int) *node.Hooks {
	return &node.Hooks{
		Bug:     c.bug,
		OnEvent: func(ev lock.Event) { c.rec.event(name, group, ev) },
		OnApply: func(index uint64, entry []byte, st *lock.State) { c.rec.apply(name, group, index, entry, st) },
		OnApplyPanic: func(index uint64, v any, stack []byte) {
			c.rec.panicked(name, "apply", group, index, v, stack)
		},
		OnWake: func(res string, index uint64, lease lock.LeaseID, woken int) {
			c.rec.wake(group, res, index, lease, woken)
		},
	}
}

// host returns member id's running host, or nil.
func (c *Cluster) host(id string) *shard.Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.byID[id]; m != nil {
		return m.host
	}
	return nil
}
