package scenarios

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/failpoint"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/server"
	"github.com/lockstep/lockstep/core/shard"
	"github.com/lockstep/lockstep/nemesis"
	"github.com/lockstep/lockstep/sim"
)

// Cluster is several independent Raft groups (shards) of real lockstep
// nodes on one simulated network. It implements nemesis.Cluster.
type Cluster struct {
	// run makes failpoint names unique per run: failpoint's registry is
	// process-wide and its objects must not cross synctest bubbles.
	run    string
	net    *sim.Network
	rec    *recorder
	bug    node.Bug
	groups [][]*member
	byID   map[string]*member
	order  []string
	work   *workload
	// snap is how often nodes snapshot; snapshots and restores count what
	// stopped nodes did (the run reports them: snapshots must be exercised).
	snap                Snapshots
	snapshots, restores atomic.Uint64

	mu sync.Mutex
}

var (
	_ nemesis.Cluster = (*Cluster)(nil)
	_ Target          = (*Cluster)(nil)
)

// member is one node slot: its disk and clock outlive crashes.
type member struct {
	id    string
	group int
	peers []node.Peer
	clock *sim.Clock
	// transport is the running node's; nil while it is down.
	transport *sim.Transport
	// rate is the clock's own drift, to which clock faults return.
	rate   float64
	stores node.Stores
	ids    *rand.Rand // lease id randomness, seeded
	idsMu  sync.Mutex
	node   *node.Node
	wiped  bool
}

type clusterOptions struct {
	groups, nodes int
	seed          uint64
	bug           node.Bug
	snap          Snapshots
}

func newCluster(net *sim.Network, rec *recorder, opts clusterOptions) (*Cluster, error) {
	c := &Cluster{run: fmt.Sprintf("run%d", runCounter.Add(1)), net: net, rec: rec, bug: opts.bug,
		byID: make(map[string]*member), snap: opts.snap.withDefaults()}
	seeds := rand.New(rand.NewPCG(opts.seed, 7))
	for g := 0; g < opts.groups; g++ {
		var peers []node.Peer
		for i := 0; i < opts.nodes; i++ {
			id := fmt.Sprintf("s%dn%d", g+1, i+1)
			peers = append(peers, node.Peer{ID: id, RaftAddr: id})
		}
		var ms []*member
		for _, p := range peers {
			m := &member{
				id: p.ID, group: g, peers: peers, stores: c.memStores(p.ID),
				ids: rand.New(rand.NewPCG(seeds.Uint64(), seeds.Uint64())),
			}
			// Each node's clock starts at its own arbitrary point and runs at
			// its own rate, within clockDriftMax of true time.
			m.rate = 1 + (2*seeds.Float64()-1)*clockDriftMax
			m.clock = sim.NewClockAt(time.Duration(seeds.Int64N(int64(clockOriginMax))), m.rate)
			net.AttachClock(p.ID, m.clock)
			ms = append(ms, m)
			c.byID[p.ID] = m
			c.order = append(c.order, p.ID)
		}
		c.groups = append(c.groups, ms)
	}
	for _, id := range c.order {
		if err := c.start(c.byID[id], true); err != nil {
			c.Shutdown()
			return nil, err
		}
	}
	return c, nil
}

var runCounter atomic.Int64

// A node's clock origin is drawn in [0, clockOriginMax) and its drift rate
// in 1±clockDriftMax (100 ppm: a fair crystal).
const (
	clockOriginMax = 1_000_000 * time.Second
	clockDriftMax  = 1e-4
)

func (c *Cluster) memStores(id string) node.Stores {
	s := node.NewMemStores()
	s.Log = sim.WithFailpoints(c.failpoint(id), s.Log)
	return s
}

func (c *Cluster) failpoint(id string) string { return sim.FailpointStoreLogs(c.run + "/" + id) }

func (c *Cluster) start(m *member, bootstrap bool) error {
	c.rec.restarted(m.id)
	tr, err := c.net.NewTransport(m.id)
	if err != nil {
		return err
	}
	n, err := node.New(node.Config{
		ID: m.id, Peers: m.peers, Clock: m.clock, Bootstrap: bootstrap,
		Transport: tr, Stores: m.stores,
		Forwarder: node.NewHTTPForwarder(&sim.HTTPTransport{Net: c.net, From: m.id}),
		LeaseIDs:  m.leaseID, Bug: c.bug,
		SnapshotThreshold: c.snap.Threshold, TrailingLogs: c.snap.TrailingLogs,
		SnapshotInterval: time.Duration(c.snap.IntervalMs) * time.Millisecond,
		OnEvent:          func(ev lock.Event) { c.rec.event(m.id, m.group, ev) },
		OnApply:          func(index uint64, entry []byte, st *lock.State) { c.rec.apply(m.id, m.group, index, entry, st) },
		OnWake: func(res string, index uint64, lease lock.LeaseID, woken int) {
			c.rec.wake(m.group, res, index, lease, woken)
		},
	})
	if err != nil {
		_ = tr.Close()
		return fmt.Errorf("start %s: %w", m.id, err)
	}
	// The node's public API and its member port, as lockd serves them.
	c.net.HandleHTTP(m.id, map[string]http.Handler{
		apiPort: server.New(shard.Single(n), server.Config{}).Handler(),
		"":      n.ForwardHandler(),
	})
	c.mu.Lock()
	m.node, m.transport = n, tr
	c.mu.Unlock()
	return nil
}

func (m *member) leaseID() lock.LeaseID {
	m.idsMu.Lock()
	defer m.idsMu.Unlock()
	var id lock.LeaseID
	for i := 0; i < len(id); i += 8 {
		v := m.ids.Uint64()
		for j := 0; j < 8; j++ {
			id[i+j] = byte(v >> (8 * j))
		}
	}
	return id
}

// Node returns the running node with id, or nil.
func (c *Cluster) node(id string) *node.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.byID[id]; m != nil {
		return m.node
	}
	return nil
}

// GroupOf implements Target: hash placement (consistent hashing arrives
// with sharding).
func (c *Cluster) GroupOf(resource string) int {
	h := uint32(2166136261)
	for i := 0; i < len(resource); i++ {
		h = (h ^ uint32(resource[i])) * 16777619
	}
	return int(h % uint32(len(c.groups)))
}

// Shutdown stops every node.
func (c *Cluster) Shutdown() {
	for _, id := range c.order {
		_ = c.Crash(id)
	}
}

// Nodes implements nemesis.Cluster.
func (c *Cluster) Nodes() []string { return append([]string(nil), c.order...) }

// Leader implements nemesis.Cluster: the leader of the first group (the
// nemeses target one group; scenarios with several groups fault group 1).
func (c *Cluster) Leader() (string, bool) {
	for _, m := range c.groups[0] {
		if n := c.node(m.id); n != nil && n.IsLeader() {
			return m.id, true
		}
	}
	return "", false
}

// Cut implements nemesis.Cluster.
func (c *Cluster) Cut(pairs [][2]string) {
	c.net.Heal()
	for _, p := range pairs {
		c.net.CutBoth(p[0], p[1])
	}
}

// Crash implements nemesis.Cluster.
func (c *Cluster) Crash(id string) error {
	c.mu.Lock()
	m := c.byID[id]
	if m == nil {
		c.mu.Unlock()
		return fmt.Errorf("no node %q", id)
	}
	n, tr := m.node, m.transport
	m.node, m.transport = nil, nil
	c.mu.Unlock()
	if n == nil {
		return nil
	}
	// A crash is abrupt: the node vanishes from the network at once, so the
	// others elect a leader while it finishes shutting down (which waits for
	// its in-flight applies).
	_ = tr.Close()
	st := n.Stats()
	c.snapshots.Add(st.Snapshots)
	c.restores.Add(st.Restores)
	c.net.HandleHTTP(id, nil)
	return n.Shutdown()
}

// WipeDisk implements nemesis.Cluster: crash and lose every store.
func (c *Cluster) WipeDisk(id string) error {
	if err := c.Crash(id); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byID[id]
	m.stores = c.memStores(id)
	m.wiped = true
	return nil
}

// Restart implements nemesis.Cluster. A wiped node comes back empty and
// is caught up by the others. When a majority of its group has lost its
// disk, the group cannot recover its log: Restart then runs the rebuild
// path an operator would (wipe the rest, bootstrap the group empty, clients
// retry), and the checker must report the lost state.
func (c *Cluster) Restart(id string) error {
	c.mu.Lock()
	m := c.byID[id]
	if m == nil || m.node != nil {
		c.mu.Unlock()
		return nil
	}
	group := c.groups[m.group]
	wiped := 0
	for _, g := range group {
		if g.wiped {
			wiped++
		}
	}
	c.mu.Unlock()
	if !m.wiped || wiped*2 <= len(group) {
		m.wiped = false
		return c.start(m, false)
	}
	return c.rebuild(group)
}

// rebuild re-forms a group from empty disks.
func (c *Cluster) rebuild(group []*member) error {
	for _, g := range group {
		if err := c.WipeDisk(g.id); err != nil {
			return err
		}
	}
	for _, g := range group {
		g.wiped = false
		if err := c.start(g, true); err != nil {
			return err
		}
	}
	return nil
}

// Pause implements nemesis.Cluster.
func (c *Cluster) Pause(id string) { c.net.Pause(id) }

// Resume implements nemesis.Cluster.
func (c *Cluster) Resume(id string) { c.net.Resume(id) }

// SetClockOffset implements nemesis.Cluster.
func (c *Cluster) SetClockOffset(id string, offset time.Duration) {
	if m := c.byID[id]; m != nil {
		m.clock.SetOffset(offset)
	}
}

// SetClockRate implements nemesis.Cluster.
func (c *Cluster) SetClockRate(id string, rate float64) {
	if m := c.byID[id]; m != nil {
		_ = m.clock.SetRate(rate * m.rate)
	}
}

// JumpClock implements nemesis.Cluster.
func (c *Cluster) JumpClock(id string, d time.Duration) {
	if m := c.byID[id]; m != nil {
		m.clock.Jump(d)
	}
}

// SetDiskFault implements nemesis.Cluster through the log store failpoint.
func (c *Cluster) SetDiskFault(id string, delay time.Duration, fail bool) {
	name := c.failpoint(id)
	switch {
	case fail:
		_ = failpoint.Enable(name, "return(true)")
	case delay > 0:
		_ = failpoint.Enable(name, fmt.Sprintf("return(%d)", delay.Milliseconds()))
	default:
		_ = failpoint.Disable(name)
	}
}

// PauseClient implements nemesis.Cluster.
func (c *Cluster) PauseClient(client int, d time.Duration) { c.work.pause(client, d) }

// GroupCount implements Target.
func (c *Cluster) GroupCount() int { return len(c.groups) }

// Members implements Target.
func (c *Cluster) Members(g int) []string {
	ids := make([]string, 0, len(c.groups[g]))
	for _, m := range c.groups[g] {
		ids = append(ids, m.id)
	}
	return ids
}

// URL implements Target: a simulated node's API port.
func (c *Cluster) URL(member string) string { return "http://" + net.JoinHostPort(member, apiPort) }

// Transport implements Target: the simulated network, from client.
func (c *Cluster) Transport(client string) http.RoundTripper {
	return &sim.HTTPTransport{Net: c.net, From: client}
}

// Clients implements nemesis.Cluster.
func (c *Cluster) Clients() int { return c.work.size() }

// clearFaults undoes every fault so the recovery phase starts healthy.
func (c *Cluster) clearFaults() {
	c.net.Heal()
	for _, id := range c.order {
		c.net.Resume(id)
		m := c.byID[id]
		m.clock.SetOffset(0)
		_ = m.clock.SetRate(m.rate)
		c.SetDiskFault(id, 0, false)
		_ = c.Restart(id)
	}
}
