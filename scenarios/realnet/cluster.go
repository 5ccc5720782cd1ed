package realnet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
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

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/faultctl"
	"github.com/lockstep/lockstep/nemesis"
	"github.com/lockstep/lockstep/nemesis/proxy"
	"github.com/lockstep/lockstep/scenarios"
)

// Cluster is real lockd processes on loopback, one independent Raft group
// per scenario group, every member-to-member link through nemesis/proxy.
// It implements nemesis.Cluster and scenarios.Target.
type Cluster struct {
	opts    ClusterOptions
	groups  [][]*member
	byID    map[string]*member
	order   []string
	meshes  []*proxy.Mesh
	harness *scenarios.Harness
	api     *http.Client

	mu sync.Mutex
	// unsupported counts fault calls real processes cannot honour.
	unsupported map[string]int
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
	Dir           string
	Groups, Nodes int
	// Bug is passed as --fault-bug (the binary needs lockstep_bugs).
	Bug string
	// Args are added to every member's command line: snapshot tuning,
	// Raft timeouts, and later --shards.
	Args []string
}

// member is one process slot: its data dir and trace outlive crashes.
type member struct {
	id                          string
	group                       int
	raftAddr, httpAddr, control string
	dataDir, trace, log         string
	proc                        *process
	paused, wiped               bool
}

// freePort reserves a loopback port by binding and releasing it.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// NewCluster lays out the members and their proxies and starts every
// process with --bootstrap.
func NewCluster(opts ClusterOptions) (*Cluster, error) {
	c := &Cluster{opts: opts, byID: map[string]*member{}, unsupported: map[string]int{},
		api: &http.Client{Timeout: 300 * time.Millisecond}}
	for g := range opts.Groups {
		var ms []*member
		for i := range opts.Nodes {
			m := &member{id: fmt.Sprintf("s%dn%d", g+1, i+1), group: g}
			for _, p := range []*string{&m.raftAddr, &m.httpAddr, &m.control} {
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
			ms = append(ms, m)
			c.byID[m.id] = m
			c.order = append(c.order, m.id)
		}
		c.groups = append(c.groups, ms)
	}
	for g, ms := range c.groups {
		targets := map[string]string{}
		var ids []string
		for _, m := range ms {
			targets[m.id] = m.raftAddr
			ids = append(ids, m.id)
		}
		mesh, err := proxy.NewMesh(proxy.MeshOptions{Members: ids, Targets: targets, Identify: c.identify(g)})
		if err != nil {
			c.Shutdown()
			return nil, err
		}
		c.meshes = append(c.meshes, mesh)
	}
	for _, id := range c.order {
		if err := c.start(c.byID[id], true); err != nil {
			c.Shutdown()
			return nil, err
		}
	}
	return c, nil
}

// identify names the member of group g that opened a connection.
func (c *Cluster) identify(g int) func(net.Addr) (string, bool) {
	return func(remote net.Addr) (string, bool) {
		pids := map[int]string{}
		c.mu.Lock()
		for _, m := range c.groups[g] {
			if m.proc != nil {
				pids[m.proc.pid()] = m.id
			}
		}
		c.mu.Unlock()
		return socketOwner(remote, pids)
	}
}

// args is m's command line: its own peer list names the proxies it
// reaches the others through.
func (c *Cluster) args(m *member, bootstrap bool) []string {
	var peers []string
	for _, o := range c.groups[m.group] {
		raft := o.raftAddr
		if o != m {
			raft = c.meshes[m.group].Addr(m.id, o.id)
		}
		peers = append(peers, fmt.Sprintf("%s=%s@%s", o.id, raft, o.httpAddr))
	}
	a := []string{"--id", m.id, "--raft-addr", m.raftAddr, "--http-addr", m.httpAddr, "--data-dir", m.dataDir,
		"--peers", strings.Join(peers, ","), "--fault-trace", m.trace, "--fault-control", m.control, "--insecure"}
	if bootstrap {
		a = append(a, "--bootstrap")
	}
	if c.opts.Bug != "" {
		a = append(a, "--fault-bug", c.opts.Bug)
	}
	return append(a, c.opts.Args...)
}

func (c *Cluster) start(m *member, bootstrap bool) error {
	p, err := startProcess(c.opts.Bin, c.args(m, bootstrap), m.log)
	if err != nil {
		return fmt.Errorf("start %s: %w", m.id, err)
	}
	c.mu.Lock()
	m.proc, m.paused = p, false
	c.mu.Unlock()
	return nil
}

// Shutdown stops every member cleanly and closes the proxies.
func (c *Cluster) Shutdown() {
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
	for _, mesh := range c.meshes {
		_ = mesh.Close()
	}
}

// Nodes implements nemesis.Cluster.
func (c *Cluster) Nodes() []string { return slices.Clone(c.order) }

// Leader implements nemesis.Cluster: the member of group 1 that says it
// leads (the nemeses fault group 1, as in the simulator).
func (c *Cluster) Leader() (string, bool) {
	for _, m := range c.groups[0] {
		if c.raftState(m) == "leader" {
			return m.id, true
		}
	}
	return "", false
}

// raftState asks m's /livez; "" when it does not answer.
func (c *Cluster) raftState(m *member) string {
	c.mu.Lock()
	up := m.proc != nil && !m.paused
	c.mu.Unlock()
	if !up {
		return ""
	}
	resp, err := c.api.Get("http://" + m.httpAddr + api.PathLive)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var h api.Health
	if json.NewDecoder(resp.Body).Decode(&h) != nil {
		return ""
	}
	return strings.ToLower(h.RaftState)
}

// Cut implements nemesis.Cluster: each group's mesh severs the pairs
// inside it (groups share no links).
func (c *Cluster) Cut(pairs [][2]string) {
	for g, mesh := range c.meshes {
		var inside [][2]string
		for _, p := range pairs {
			a, b := c.byID[p[0]], c.byID[p[1]]
			if a != nil && b != nil && a.group == g && b.group == g {
				inside = append(inside, p)
			}
		}
		mesh.Cut(inside)
	}
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
	for _, o := range c.groups[m.group] {
		if o.wiped {
			wiped++
		}
	}
	c.mu.Unlock()
	if running {
		return nil
	}
	if !m.wiped || wiped*2 <= len(c.groups[m.group]) {
		bootstrap := !m.wiped
		m.wiped = false
		return c.start(m, bootstrap)
	}
	return c.rebuild(m.group)
}

func (c *Cluster) rebuild(g int) error {
	for _, o := range c.groups[g] {
		if err := c.WipeDisk(o.id); err != nil {
			return err
		}
	}
	for _, o := range c.groups[g] {
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

// SetDiskFault implements nemesis.Cluster. The log-store failpoints exist
// only in the simulator (production lockd links no failpoint), so real
// processes cannot honour it: the call is counted, and the runner skips
// scenarios that need it unless told to run them without.
func (c *Cluster) SetDiskFault(id string, delay time.Duration, fail bool) {
	if delay == 0 && !fail {
		return
	}
	c.mu.Lock()
	c.unsupported["SetDiskFault"]++
	c.mu.Unlock()
}

// PauseClient implements nemesis.Cluster.
func (c *Cluster) PauseClient(client int, d time.Duration) { c.harness.PauseClient(client, d) }

// Clients implements nemesis.Cluster.
func (c *Cluster) Clients() int { return c.harness.Clients() }

// GroupCount implements scenarios.Target.
func (c *Cluster) GroupCount() int { return len(c.groups) }

// GroupOf implements scenarios.Target with the simulator's placement.
func (c *Cluster) GroupOf(resource string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(resource))
	return int(h.Sum32() % uint32(len(c.groups)))
}

// Members implements scenarios.Target.
func (c *Cluster) Members(g int) []string {
	ids := make([]string, 0, len(c.groups[g]))
	for _, m := range c.groups[g] {
		ids = append(ids, m.id)
	}
	return ids
}

// URL implements scenarios.Target.
func (c *Cluster) URL(member string) string { return "http://" + c.byID[member].httpAddr }

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
		c.SetClockOffset(id, 0)
		c.SetClockRate(id, 1)
		if err := c.Restart(id); err != nil {
			slog.Warn("realnet: restart", "node", id, "err", err)
		}
	}
}

// awaitLeaders waits until every group has a member that says it leads.
func (c *Cluster) awaitLeaders(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for g := range c.groups {
		for {
			led := slices.ContainsFunc(c.groups[g], func(m *member) bool { return c.raftState(m) == "leader" })
			if led {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("group %d elected no leader within %s (logs in %s)", g+1, limit, c.opts.Dir)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}
