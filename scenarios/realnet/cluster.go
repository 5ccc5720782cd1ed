package realnet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockstep/lockstep/core/faultctl"
	"github.com/lockstep/lockstep/core/loopback"
	"github.com/lockstep/lockstep/core/placement"
	"github.com/lockstep/lockstep/nemesis"
	"github.com/lockstep/lockstep/nemesis/proxy"
	"github.com/lockstep/lockstep/scenarios"
)

// Cluster is real lockd processes on loopback, every member-to-member
// link through nemesis/proxy. As in the simulator, a one-group scenario
// runs one lock shard on each member and a scenario with several groups
// runs sharded members (lockd --shards N: the metadata group and N lock
// shards, all multiplexed on the member port, so one proxy per directed
// link carries every group). It implements nemesis.Cluster and
// scenarios.Target.
type Cluster struct {
	opts    ClusterOptions
	members []*member
	byID    map[string]*member
	order   []string
	mesh    *proxy.Mesh
	// net, instead of mesh, makes partitions at packet level (netns.go).
	net     *netnsNet
	gw      *gateway
	harness *scenarios.Harness
	api     *http.Client

	mu sync.Mutex
	// failedSyncs counts, per member, the log syncs its failing disks
	// failed (read when each was healed; disk.go).
	failedSyncs map[string]int64
}

var (
	_ nemesis.Cluster  = (*Cluster)(nil)
	_ scenarios.Target = (*Cluster)(nil)
)

// ClusterOptions describe the processes of a run.
type ClusterOptions struct {
	// Bin is the lockd binary (built with the lockstep_faults tag).
	Bin string
	// Dir holds data dirs, traces and logs.
	Dir   string
	Nodes int
	// Shards > 1 runs sharded members with that many lock shards.
	Shards int
	// LeaderOf is the group whose leader Leader reports on sharded
	// members: 0 the metadata group, s lock shard s.
	LeaderOf int
	// SoleLeader makes Leader report LeaderOf's leader only while it
	// leads no other lock shard, as the simulator does; see Leader.
	SoleLeader bool
	// Gateway runs a lockd gateway joined to every member; it stands with
	// member GatewayHome in partitions.
	Gateway     bool
	GatewayHome string
	// Delay is every member link's one-way latency through its proxy.
	Delay time.Duration
	// HostCrash makes a crashed member's host vanish from the network
	// instead of refusing connections (hostcrash.go).
	HostCrash bool
	// Bug is passed as --fault-bug (the binary needs lockstep_bugs).
	Bug string
	// Netns runs each member in its own network namespace and makes
	// partitions by dropping packets there, instead of with proxies
	// (netns.go; no gateway, no added latency).
	Netns bool
	// Args are added to every member's command line: snapshot tuning,
	// Raft timeouts, and later --shards.
	Args []string
}

// member is one process slot: its data dir and trace outlive crashes.
type member struct {
	id                          string
	raftAddr, httpAddr, control string
	// front is the API front proxy of a host-crash run, else nil.
	front               *front
	dataDir, trace, log string
	proc                *process
	paused, wiped       bool
	// disk is the log disk fault the nemesis set on this slot; it
	// outlives a restart, as the simulator's failpoint does (disk.go).
	disk faultctl.DiskChange
}

// spreadInterval is the simulator's: leaders spread again between a
// scenario's faults (lockd's default is 2 s).
const spreadInterval = 500 * time.Millisecond

// freePort picks a loopback address a restarted member can bind again.
func freePort() (string, error) { return loopback.Addr() }

// NewCluster lays out the members and their proxies and starts every
// process with --bootstrap (and the gateway, if asked).
func NewCluster(opts ClusterOptions) (_ *Cluster, err error) {
	c := &Cluster{opts: opts, byID: map[string]*member{}, failedSyncs: map[string]int64{},
		api: &http.Client{Timeout: time.Second}}
	defer func() {
		if err != nil {
			c.Shutdown()
		}
	}()
	if opts.Netns {
		if opts.Gateway {
			return nil, fmt.Errorf("%w: the gateway's links are proxies", ErrNoNetns)
		}
		var ids []string
		for i := range opts.Nodes {
			ids = append(ids, memberID(opts.Shards, i+1))
		}
		n, err := newNetns(ids)
		if err != nil {
			return nil, err
		}
		c.net = n
	}
	targets := map[string]string{}
	for i := range opts.Nodes {
		m := &member{id: memberID(opts.Shards, i+1)}
		if c.net != nil {
			m.raftAddr, m.httpAddr, m.control = c.net.addr(m.id, netnsRaftPort), c.net.addr(m.id, netnsHTTPPort), c.net.addr(m.id, netnsControlPort)
		}
		for _, p := range []*string{&m.raftAddr, &m.httpAddr, &m.control} {
			if *p != "" {
				continue
			}
			addr, err := freePort()
			if err != nil {
				return nil, err
			}
			*p = addr
		}
		m.dataDir = filepath.Join(opts.Dir, m.id, "data")
		m.trace = filepath.Join(opts.Dir, m.id+".trace")
		m.log = filepath.Join(opts.Dir, m.id+".log")
		if err := os.MkdirAll(m.dataDir, 0o755); err != nil {
			return nil, err
		}
		if opts.HostCrash {
			if err := c.openFront(m); err != nil {
				return nil, err
			}
		}
		c.members = append(c.members, m)
		c.byID[m.id] = m
		c.order = append(c.order, m.id)
		targets[m.id] = m.raftAddr
	}
	if c.net == nil {
		mesh, err := proxy.NewMesh(proxy.MeshOptions{Members: c.order, Targets: targets, Identify: c.identify})
		if err != nil {
			return nil, err
		}
		mesh.SetDelay(opts.Delay)
		c.mesh = mesh
	}
	for _, m := range c.members {
		if err := c.start(m, true); err != nil {
			return nil, err
		}
	}
	if opts.Gateway {
		if err := c.startGateway(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// memberID is the simulator's name of member i (1-based): s1n1.. for one
// group's nodes, n1.. for sharded members.
func memberID(shards, i int) string {
	if shards > 1 {
		return fmt.Sprintf("n%d", i)
	}
	return fmt.Sprintf("s1n%d", i)
}

// sharded reports whether members run several lock shards.
func (c *Cluster) sharded() bool { return c.opts.Shards > 1 }

// identify names the member that opened a connection.
func (c *Cluster) identify(remote net.Addr) (string, bool) {
	pids := map[int]string{}
	c.mu.Lock()
	for _, m := range c.members {
		if m.proc != nil {
			pids[m.proc.pid()] = m.id
		}
	}
	c.mu.Unlock()
	return socketOwner(remote, pids)
}

// args is m's command line: its own peer list names the proxies it
// reaches the others through.
func (c *Cluster) args(m *member, bootstrap bool) []string {
	var peers []string
	for _, o := range c.members {
		raft := o.raftAddr
		if o != m && c.mesh != nil {
			raft = c.mesh.Addr(m.id, o.id)
		}
		peers = append(peers, fmt.Sprintf("%s=%s@%s", o.id, raft, o.apiAddr()))
	}
	a := []string{"--id", m.id, "--raft-addr", m.raftAddr, "--http-addr", m.httpAddr, "--data-dir", m.dataDir,
		"--peers", strings.Join(peers, ","), "--fault-trace", m.trace, "--fault-control", m.control, "--insecure"}
	if bootstrap {
		a = append(a, "--bootstrap")
	}
	if c.opts.Bug != "" {
		a = append(a, "--fault-bug", c.opts.Bug)
	}
	if m.front != nil {
		a = append(a, "--advertise-http", m.front.addr)
	}
	if c.sharded() {
		a = append(a, "--shards", fmt.Sprint(c.opts.Shards), "--spread-interval", spreadInterval.String())
	}
	return append(a, c.opts.Args...)
}

func (c *Cluster) start(m *member, bootstrap bool) error {
	bin, args := c.opts.Bin, c.args(m, bootstrap)
	if c.net != nil {
		bin, args = c.net.command(m.id, bin, args)
	}
	p, err := startProcess(bin, args, m.log)
	if err != nil {
		return fmt.Errorf("start %s: %w", m.id, err)
	}
	c.mu.Lock()
	m.proc, m.paused = p, false
	disk := m.disk
	c.mu.Unlock()
	m.hostDown(false)
	if disk != (faultctl.DiskChange{}) {
		go c.reapplyDisk(m, p, disk)
	}
	return nil
}

// Shutdown stops the gateway and every member cleanly and closes the
// proxies.
func (c *Cluster) Shutdown() {
	c.stopGateway()
	var wg sync.WaitGroup
	for _, m := range c.byID {
		c.mu.Lock()
		p := m.proc
		m.proc = nil
		c.mu.Unlock()
		if p != nil {
			wg.Add(1)
			go func() { defer wg.Done(); p.stop(5 * time.Second) }()
		}
	}
	wg.Wait()
	if c.mesh != nil {
		_ = c.mesh.Close()
	}
	if c.net != nil {
		c.net.close()
		c.net = nil
	}
	for _, m := range c.members {
		m.closeFront()
	}
}

// Nodes implements nemesis.Cluster.
func (c *Cluster) Nodes() []string { return slices.Clone(c.order) }

// Cut implements nemesis.Cluster.
func (c *Cluster) Cut(pairs [][2]string) {
	if c.net != nil {
		if err := c.net.cut(pairs); err != nil {
			slog.Warn("realnet: packet-level cut", "err", err)
		}
	} else {
		c.mesh.Cut(pairs)
	}
	c.cutGateway(pairs)
}

// Crash implements nemesis.Cluster: kill -9.
func (c *Cluster) Crash(id string) error {
	m := c.byID[id]
	if m == nil {
		return fmt.Errorf("no node %q", id)
	}
	c.mu.Lock()
	p := m.proc
	m.proc, m.paused = nil, false
	c.mu.Unlock()
	if p != nil {
		// The host goes first, so no reset from the dying process gets out.
		m.hostDown(true)
		p.kill()
	}
	return nil
}

// WipeDisk implements nemesis.Cluster: kill -9 and remove the data dir.
func (c *Cluster) WipeDisk(id string) error {
	if err := c.Crash(id); err != nil {
		return err
	}
	m := c.byID[id]
	if err := os.RemoveAll(m.dataDir); err != nil {
		return fmt.Errorf("wipe %s: %w", id, err)
	}
	if err := os.MkdirAll(m.dataDir, 0o755); err != nil {
		return fmt.Errorf("wipe %s: %w", id, err)
	}
	c.mu.Lock()
	m.wiped = true
	c.mu.Unlock()
	return nil
}

// Restart implements nemesis.Cluster with the same command line. A wiped
// member comes back without --bootstrap and is caught up by the others;
// when a majority of its group lost its disk the group is rebuilt empty,
// as the simulator does (the checker must then report the lost state).
func (c *Cluster) Restart(id string) error {
	m := c.byID[id]
	if m == nil {
		return fmt.Errorf("no node %q", id)
	}
	c.mu.Lock()
	running := m.proc != nil
	wiped := 0
	for _, o := range c.members {
		if o.wiped {
			wiped++
		}
	}
	c.mu.Unlock()
	if running {
		return nil
	}
	if !m.wiped || wiped*2 <= len(c.members) {
		bootstrap := !m.wiped
		m.wiped = false
		return c.start(m, bootstrap)
	}
	return c.rebuild()
}

// rebuild re-forms the members from empty data dirs.
func (c *Cluster) rebuild() error {
	for _, o := range c.members {
		if err := c.WipeDisk(o.id); err != nil {
			return err
		}
	}
	for _, o := range c.members {
		o.wiped = false
		if err := c.start(o, true); err != nil {
			return err
		}
	}
	return nil
}

// Pause implements nemesis.Cluster: SIGSTOP, the whole process frozen.
func (c *Cluster) Pause(id string) { c.pauseSignal(id, syscall.SIGSTOP, true) }

// Resume implements nemesis.Cluster: SIGCONT.
func (c *Cluster) Resume(id string) { c.pauseSignal(id, syscall.SIGCONT, false) }

func (c *Cluster) pauseSignal(id string, sig syscall.Signal, paused bool) {
	m := c.byID[id]
	if m == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.proc != nil && m.paused != paused {
		if err := m.proc.signal(sig); err != nil {
			slog.Warn("realnet: signal", "node", id, "signal", sig, "err", err)
		}
		m.paused = paused
	}
}

// SetClockOffset implements nemesis.Cluster through the clock control.
func (c *Cluster) SetClockOffset(id string, offset time.Duration) {
	v := int64(offset)
	c.clock(id, faultctl.ClockChange{OffsetNs: &v})
}

// SetClockRate implements nemesis.Cluster.
func (c *Cluster) SetClockRate(id string, rate float64) {
	c.clock(id, faultctl.ClockChange{Rate: &rate})
}

// JumpClock implements nemesis.Cluster.
func (c *Cluster) JumpClock(id string, d time.Duration) {
	v := int64(d)
	c.clock(id, faultctl.ClockChange{JumpNs: &v})
}

// clock posts a change to id's clock control. A crashed member has no
// clock to change; a paused one answers once resumed, so the post does not
// wait for it (the simulator freezes the clock of a paused node instead).
func (c *Cluster) clock(id string, ch faultctl.ClockChange) {
	m := c.byID[id]
	if m == nil {
		return
	}
	b, _ := json.Marshal(ch)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+m.control+faultctl.ControlPath, bytes.NewReader(b))
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		slog.Info("realnet: clock change not delivered", "node", id, "err", err)
		return
	}
	_ = resp.Body.Close()
}

// PauseClient implements nemesis.Cluster.
func (c *Cluster) PauseClient(client int, d time.Duration) { c.harness.PauseClient(client, d) }

// Clients implements nemesis.Cluster.
func (c *Cluster) Clients() int { return c.harness.Clients() }

// GroupCount implements scenarios.Target: the lock shards.
func (c *Cluster) GroupCount() int { return max(1, c.opts.Shards) }

// GroupOf implements scenarios.Target with the simulator's placement:
// core/placement on sharded members (group index s-1 for shard s).
func (c *Cluster) GroupOf(resource string) int {
	if c.sharded() {
		return int(placement.Of(resource, c.opts.Shards)) - 1
	}
	return 0
}

// Members implements scenarios.Target: every member serves every shard.
func (c *Cluster) Members(int) []string { return slices.Clone(c.order) }

// URL implements scenarios.Target.
func (c *Cluster) URL(member string) string { return "http://" + c.byID[member].apiAddr() }

// Transport implements scenarios.Target: real HTTP on loopback.
func (c *Cluster) Transport(string) http.RoundTripper {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
}

// clearFaults undoes every fault: heal, resume, clocks back, everyone up.
func (c *Cluster) clearFaults() {
	c.Cut(nil)
	for _, id := range c.order {
		c.Resume(id)
		c.SetDiskFault(id, 0, false)
		c.SetClockOffset(id, 0)
		c.SetClockRate(id, 1)
		if err := c.Restart(id); err != nil {
			slog.Warn("realnet: restart", "node", id, "err", err)
		}
	}
}
