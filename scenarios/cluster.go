package scenarios

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/failpoint"

	"github.com/lockstep/lockstep/core/forward"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/placement"
	"github.com/lockstep/lockstep/core/raftadapter"
	"github.com/lockstep/lockstep/core/raftlink"
	"github.com/lockstep/lockstep/core/server"
	"github.com/lockstep/lockstep/core/service"
	"github.com/lockstep/lockstep/core/shard"
	"github.com/lockstep/lockstep/nemesis"
	"github.com/lockstep/lockstep/sim"
)

// Cluster is the real lockstep members of one run on one simulated
// network. A one-group scenario runs one Raft group of nodes; a scenario
// with several groups runs sharded members (shardhost.go): every member a
// core/shard.Host with the metadata group and the lock shards, as lockd
// runs it. It implements nemesis.Cluster.
type Cluster struct {
	// run makes failpoint names unique per run: failpoint's registry is
	// process-wide and its objects must not cross synctest bubbles.
	run string
	net *sim.Network
	rec *recorder
	bug node.Bug
	// shards is the lock shard count of sharded members; 0 runs each
	// group as independent nodes.
	shards int
	// leaderOf is the group whose leader Leader reports (sharded only).
	leaderOf int
	// groups lists the members that share a fate: one group's nodes, or
	// all sharded members (a majority wiped rebuilds them together).
	groups [][]*member
	byID   map[string]*member
	order  []string
	work   *workload
	// snap is how often nodes snapshot; snapshots and restores count what
	// stopped nodes did (the run reports them: snapshots must be exercised).
	snap                Snapshots
	snapshots, restores atomic.Uint64
	// deadlockInterval runs the cross-shard deadlock detector of sharded
	// members that often (0: off).
	deadlockInterval time.Duration
	// gw is the running gateway host (gatewayhost.go), if the scenario has
	// one; gwHome is the member whose side of a partition it is on.
	gw     *simGateway
	gwHome string

	mu sync.Mutex
}

var (
	_ nemesis.Cluster = (*Cluster)(nil)
	_ Target          = (*Cluster)(nil)
)

// member is one node slot (a process): its disks and clock outlive crashes.
type member struct {
	id    string
	group int
	peers []node.Peer
	clock *sim.Clock
	// transports are the running member's, one per Raft group; nil while
	// it is down.
	transports []*raftlink.Transport
	// rate is the clock's own drift, to which clock faults return.
	rate float64
	// stores are the disks by Raft group: 0 for an unsharded node; 0 (the
	// metadata group) and 1..shards for a sharded member.
	stores map[uint64]raftadapter.Stores
	ids    *rand.Rand // lease id randomness, seeded
	idsMu  sync.Mutex
	// node (unsharded) or host (sharded) runs while the member is up.
	node  *node.Node
	host  *shard.Host
	wiped bool
}

func (m *member) up() bool { return m.node != nil || m.host != nil }

type clusterOptions struct {
	groups, nodes int
	seed          uint64
	bug           node.Bug
	snap          Snapshots
	// leaderOf is the group the leader-targeting nemeses hit on sharded
	// members: 0 the metadata group, s lock shard s.
	leaderOf int
	// gateway runs a gateway host joined to every member.
	gateway bool
	// exactClocks is Scenario.ExactClocks.
	exactClocks bool
	// deadlockInterval is Scenario.DeadlockIntervalMs.
	deadlockInterval time.Duration
}

func newCluster(net *sim.Network, rec *recorder, opts clusterOptions) (*Cluster, error) {
	c := &Cluster{run: fmt.Sprintf("run%d", runCounter.Add(1)), net: net, rec: rec, bug: opts.bug,
		byID: make(map[string]*member), snap: opts.snap.withDefaults(), leaderOf: opts.leaderOf,
		deadlockInterval: opts.deadlockInterval}
	seeds := rand.New(rand.NewPCG(opts.seed, 7))
	memberships := opts.groups
	if opts.groups > 1 {
		c.shards, memberships = opts.groups, 1
	}
	for g := 0; g < memberships; g++ {
		var peers []node.Peer
		for i := 0; i < opts.nodes; i++ {
			id := fmt.Sprintf("s%dn%d", g+1, i+1)
			if c.shards > 0 {
				id = fmt.Sprintf("n%d", i+1)
			}
			peers = append(peers, node.Peer{ID: id, RaftAddr: id})
		}
		var ms []*member
		for _, p := range peers {
			m := &member{
				id: p.ID, group: g, peers: peers, stores: make(map[uint64]raftadapter.Stores),
				ids: rand.New(rand.NewPCG(seeds.Uint64(), seeds.Uint64())),
			}
			// Each node's clock starts at its own arbitrary point and runs at
			// its own rate, within clockDriftMax of true time.
			m.rate = 1 + (2*seeds.Float64()-1)*clockDriftMax
			origin := time.Duration(seeds.Int64N(int64(clockOriginMax)))
			if opts.exactClocks {
				m.rate, origin = 1, origin.Truncate(time.Second)
			}
			m.clock = sim.NewClockAt(origin, m.rate)
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
	if opts.gateway {
		// Drawn only with a gateway, so other scenarios keep their seeds.
		c.gwHome = c.order[seeds.IntN(len(c.order))]
		if err := c.startGateway(); err != nil {
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

func (c *Cluster) memStores(id string) raftadapter.Stores {
	s := raftadapter.NewMemStores()
	s.Log = sim.WithFailpoints(c.failpoint(id), s.Log)
	return s
}

func (c *Cluster) failpoint(id string) string { return sim.FailpointStoreLogs(c.run + "/" + id) }

// groupStores returns the member's disk of Raft group g, a fresh one the
// first time (and after a wipe).
func (c *Cluster) groupStores(m *member, g uint64) raftadapter.Stores {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := m.stores[g]
	if !ok {
		s = c.memStores(m.id)
		m.stores[g] = s
	}
	return s
}

func (c *Cluster) start(m *member, bootstrap bool) error {
	if c.shards > 0 {
		return c.startHost(m, bootstrap)
	}
	stores := c.groupStores(m, 0)
	c.rec.restarted(m.id, m.group, &stores)
	ml := c.net.NewMemberLink(m.id)
	links, err := raftlink.New(ml, c.net.RaftConfig(m.id))
	if err != nil {
		return err
	}
	tr, err := links.Transport(0)
	if err != nil {
		return err
	}
	fwd := forward.New(ml, nil)
	n, err := node.New(node.Config{
		ID: m.id, Peers: m.peers, Clock: m.clock, Bootstrap: bootstrap,
		Transport: tr, Stores: stores, Forwarder: fwd.For(0),
		LeaseIDs:          m.leaseID,
		SnapshotThreshold: c.snap.Threshold, TrailingLogs: c.snap.TrailingLogs,
		SnapshotInterval: time.Duration(c.snap.IntervalMs) * time.Millisecond,
		Hooks:            c.nodeHooks(m.id, m.group),
	})
	if err != nil {
		_ = tr.Close()
		return fmt.Errorf("start %s: %w", m.id, err)
	}
	// The node's public API and its member link, as lockd serves them.
	fwd.Serve(0, n)
	api, err := memberAPI(shard.Single(n))
	if err != nil {
		_ = n.Shutdown()
		return fmt.Errorf("start %s: %w", m.id, err)
	}
	c.net.HandleMember(m.id, map[string]http.Handler{apiPort: api}, ml)
	c.rec.started(m.id, n.Incarnation())
	c.mu.Lock()
	m.node, m.transports = n, []*raftlink.Transport{tr}
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

// GroupOf implements Target: sharded members place by core/placement
// (group index s-1 for shard s); independent groups by a plain hash.
func (c *Cluster) GroupOf(resource string) int {
	if c.shards > 0 {
		return int(placement.Of(resource, c.shards)) - 1
	}
	h := uint32(2166136261)
	for i := 0; i < len(resource); i++ {
		h = (h ^ uint32(resource[i])) * 16777619
	}
	return int(h % uint32(len(c.groups)))
}

// Shutdown stops the gateway and every node.
func (c *Cluster) Shutdown() {
	c.stopGateway()
	for _, id := range c.order {
		_ = c.Crash(id)
	}
}

// Nodes implements nemesis.Cluster.
func (c *Cluster) Nodes() []string { return append([]string(nil), c.order...) }

// Leader implements nemesis.Cluster: the leader of the first group (the
// nemeses target one group; scenarios with independent groups fault group
// 1), or on sharded members the member leading group leaderOf — crashing
// or cutting it hits all of its groups, as with a real process. A lock
// shard's leader counts only while it leads no other lock shard: a fault
// on a member leading several is not one shard's fault, so the nemesis
// waits until leaders have spread again.
func (c *Cluster) Leader() (string, bool) {
	for _, m := range c.groups[0] {
		if !c.leads(m.id, c.leaderOf) {
			continue
		}
		for g := 1; c.leaderOf > 0 && g <= c.shards; g++ {
			if g != c.leaderOf && c.leads(m.id, g) {
				return "", false
			}
		}
		return m.id, true
	}
	return "", false
}

// leads reports whether member id runs and leads group g (unsharded: its
// only group, whatever g).
func (c *Cluster) leads(id string, g int) bool {
	if c.shards == 0 {
		n := c.node(id)
		return n != nil && n.IsLeader()
	}
	h := c.host(id)
	if h == nil {
		return false
	}
	if g == 0 {
		return h.Meta().IsLeader()
	}
	n, ok := h.Group(g)
	return ok && n.IsLeader()
}

// Cut implements nemesis.Cluster.
func (c *Cluster) Cut(pairs [][2]string) {
	c.net.Heal()
	for _, p := range slices.Concat(pairs, c.gatewayCuts(pairs)) {
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
	n, h, trs := m.node, m.host, m.transports
	m.node, m.host, m.transports = nil, nil, nil
	c.mu.Unlock()
	if n == nil && h == nil {
		return nil
	}
	// A crash is abrupt: the member vanishes from the network at once, so
	// the others elect leaders while it finishes shutting down (which
	// waits for its in-flight applies).
	for _, tr := range trs {
		_ = tr.Close()
	}
	c.net.HandleHTTP(id, nil)
	if h != nil {
		c.countSnapshots(h.Groups()...)
		return h.Shutdown()
	}
	c.countSnapshots(n)
	return n.Shutdown()
}

// countSnapshots adds what stopping nodes snapshotted and restored.
func (c *Cluster) countSnapshots(nodes ...*node.Node) {
	for _, n := range nodes {
		st := n.Stats()
		c.snapshots.Add(st.Snapshots)
		c.restores.Add(st.Restores)
	}
}

// WipeDisk implements nemesis.Cluster: crash and lose every store.
func (c *Cluster) WipeDisk(id string) error {
	if err := c.Crash(id); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byID[id]
	m.stores = make(map[uint64]raftadapter.Stores)
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
	if m == nil || m.up() {
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
		if err := c.start(m, false); err != nil {
			return err
		}
		if c.work != nil {
			c.work.rushRestarted(id)
		}
		return nil
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

// GroupCount implements Target: the lock groups.
func (c *Cluster) GroupCount() int {
	if c.shards > 0 {
		return c.shards
	}
	return len(c.groups)
}

// Members implements Target: a sharded member hosts every group.
func (c *Cluster) Members(g int) []string {
	if c.shards > 0 {
		g = 0
	}
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

// memberAPI is a member's public HTTP API over its service, as lockd wires
// them, with the default limits.
func memberAPI(h *shard.Host) (http.Handler, error) {
	svc, err := service.New(h, service.Config{})
	if err != nil {
		return nil, err
	}
	srv, err := server.New(svc, server.DefaultConfig())
	if err != nil {
		return nil, err
	}
	return srv.Handler(), nil
}
