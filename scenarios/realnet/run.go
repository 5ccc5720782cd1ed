// Package realnet runs the scenarios of package scenarios on real lockd
// processes over real TCP: the same seed derivation, fault schedule,
// workload generator (the Go client over real HTTP), recorder, checker,
// report layout and exit codes as locksim, with faults made by a proxy per
// member link (nemesis/proxy), kill -9, SIGSTOP/SIGCONT and a test-only
// clock control, and the committed trace read from the members' trace
// files (core/faultctl). Time is wall time, so a seed fixes the schedule
// and the workload's choices but not what the processes do in between.
package realnet

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/core/faultctl"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/scenarios"
)

// DefaultResultsDir is where real-process reports go (git-ignored).
const DefaultResultsDir = "results/tmp/realnet"

// Options select what a real-process run does.
type Options struct {
	Seed int64
	Bug  node.Bug
	// Bin is a lockd built with BuildTags (with lockstep_bugs for Bug).
	Bin        string
	ResultsDir string
	Persist    bool
	// LockdArgs are added to every member's command line (Raft timeouts,
	// and --shards once the node is sharded).
	LockdArgs []string
	// HostCrash makes a crash take the member's host off the network
	// (as the simulator's crash does) instead of a kill -9 on a live host.
	HostCrash bool
	// Netns makes partitions at packet level, each member in a network
	// namespace of its own (netns.go).
	Netns bool
	// Work keeps the members' data dirs, traces and logs here; "" uses a
	// temp dir removed after the run.
	Work string
}

// snapshotArgs give members the scenario's snapshot cadence, as the
// simulator's nodes have (small, so snapshots and installs happen).
func snapshotArgs(s scenarios.Scenario) []string {
	threshold, trailing, interval := s.Snapshots.Threshold, s.Snapshots.TrailingLogs, s.Snapshots.IntervalMs
	if threshold == 0 {
		threshold = 64
	}
	if trailing == 0 {
		trailing = 16
	}
	if interval == 0 {
		interval = 500
	}
	return []string{"--snapshot-threshold", fmt.Sprint(threshold), "--trailing-logs", fmt.Sprint(trailing),
		"--snapshot-interval", (time.Duration(interval) * time.Millisecond).String()}
}

// clusterOptions are the processes scenario s asks for: its members (sharded
// when it has several groups), its gateway, its base link latency (the
// proxies delay every member link by the network's latency; jitter, loss
// and duplication are not made here).
func clusterOptions(s scenarios.Scenario, opts Options, work string, rs scenarios.RunSeeds) ClusterOptions {
	co := ClusterOptions{Bin: opts.Bin, Dir: work, Nodes: s.Nodes, Gateway: s.Gateway, HostCrash: opts.HostCrash, Netns: opts.Netns,
		Delay: time.Duration(s.Network.LatencyMs * float64(time.Millisecond)),
		Bug:   string(opts.Bug), Args: append(snapshotArgs(s), opts.LockdArgs...)}
	if s.Groups > 1 {
		co.Shards = s.Groups
		if s.LeaderOf == "" {
			co.LeaderOf = 1
		}
		co.SoleLeader = s.Checks.ShardP99BoundMs > 0
	}
	if s.Gateway {
		// The simulator draws the home among its cluster draws; here it has
		// its own stream of the cluster seed.
		co.GatewayHome = memberID(co.Shards, 1+rand.New(rand.NewPCG(rs.Cluster, 7)).IntN(s.Nodes))
	}
	return co
}

// world describes the processes in a run's parameters.
func (c *Cluster) world() string {
	w := fmt.Sprintf("realnet: %d lockd processes", len(c.members))
	if c.sharded() {
		w += fmt.Sprintf(" x %d lock shards + metadata group", c.opts.Shards)
	}
	if c.gw != nil {
		w += ", a lockd gateway for every client (home " + c.gw.home + ")"
	}
	if c.opts.HostCrash {
		w += ", crashes take the host off the network"
	}
	if c.net != nil {
		return w + ", a network namespace each on a bridge, partitions dropping packets (nftables), no added latency"
	}
	return w + fmt.Sprintf(", TCP proxies on loopback delaying %s", c.opts.Delay)
}

// Run executes one scenario with one seed on real processes.
func Run(ctx context.Context, s scenarios.Scenario, opts Options) (*scenarios.Outcome, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	work := opts.Work
	if work == "" {
		tmp, err := os.MkdirTemp("", "realnet-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		work = tmp
	}
	rs := scenarios.DeriveSeeds(opts.Seed)
	out := &scenarios.Outcome{Scenario: s.Name, Seed: opts.Seed, Bug: opts.Bug}
	c, err := NewCluster(clusterOptions(s, opts, work, rs))
	if err != nil {
		return nil, err
	}
	defer c.Shutdown()
	h, err := scenarios.NewHarness(s, c, rs)
	if err != nil {
		return nil, err
	}
	c.harness = h
	if err := c.awaitLeaders(ctx, 30*time.Second); err != nil {
		return nil, err
	}
	c.awaitSpread(ctx, 15*time.Second)
	out.Schedule = s.DrawSchedule(rs)
	out.Params = append(scenarios.Params(s, scenarios.RunOptions{Seed: opts.Seed, Bug: opts.Bug}, out.Schedule, rs),
		scenarios.Param{Name: "world", Value: c.world()},
		scenarios.Param{Name: "lockd_args", Value: strings.Join(c.opts.Args, " ")})

	start := time.Now()
	if err := h.Drive(ctx, s, c, out.Schedule, rs, c.clearFaults); err != nil {
		return nil, err
	}
	out.Virtual = time.Since(start) // wall time here
	// The run ends here, as a simulation does: what the members write
	// while they are stopped is no part of it. (Recording the stop as a
	// fault instead would move the checker's stability point past the
	// end, and leave no time in which liveness is judged.)
	stopping := time.Now()
	// Counted before the stop, which makes members stand for election.
	if churn, ok := c.churnParam(c.opts.Args); ok {
		out.Params = append(out.Params, scenarios.Param{Name: "raft_churn", Value: churn})
	}
	c.Shutdown()
	if err := feedTraces(c, h, stopping); err != nil {
		return nil, err
	}

	hist := h.History(opts.Seed, s.Name)
	hist.Notes = map[string]string{"bug": string(opts.Bug), "world": "realnet"}
	out.Compared = hist.Replicas.Compared
	out.Checks = s.CheckOptions()
	out.Result = checker.Check(ctx, hist, out.Checks)
	out.AsExpected = scenarios.Expected(s, opts.Bug, out.Result)
	if opts.ResultsDir != "" && (!out.AsExpected || out.Result.Verdict != checker.Success || opts.Persist) {
		if err := scenarios.SaveReport(ctx, opts.ResultsDir, out, hist, map[string]any{"realnet": c.describe()}); err != nil {
			return out, err
		}
		copyLogs(work, out.Dir)
	}
	return out, nil
}

// feedTraces reads every member's trace file and feeds the records
// written before end to the recorder in wall-time order (one machine, one
// clock), each node's own order kept.
func feedTraces(c *Cluster, h *scenarios.Harness, end time.Time) error {
	var all []faultctl.Record
	for _, id := range c.order {
		f, err := os.Open(c.byID[id].trace)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		recs, err := faultctl.ReadTrace(f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("trace of %s: %w", id, err)
		}
		for _, r := range recs {
			if r.At < end.UnixNano() {
				all = append(all, r)
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].At < all[j].At })
	for _, r := range all {
		if c.byID[r.Node] == nil {
			return fmt.Errorf("trace names unknown node %q", r.Node)
		}
		c.feed(h, r)
	}
	return nil
}

// replica is the recorder's name and group of the replica that wrote r,
// as the simulator names them: a one-shard member is its node (group 0);
// a sharded member's lock shard g is "<member>/g<g>" (group g), since log
// indexes repeat across groups.
func (c *Cluster) replica(node string, g uint64) (string, int) {
	if !c.sharded() {
		return node, 0
	}
	return fmt.Sprintf("%s/g%d", node, g), int(g)
}

func (c *Cluster) feed(h *scenarios.Harness, r faultctl.Record) {
	name, group := c.replica(r.Node, r.Group)
	switch r.Kind {
	case faultctl.KindStart:
		for g := 1; g <= c.GroupCount(); g++ {
			started, _ := c.replica(r.Node, uint64(g))
			h.NodeStarted(started)
		}
	case faultctl.KindEvent:
		h.Event(name, checker.TraceEvent{Group: group, Index: r.Index, LogTime: r.LogTime, Kind: r.Event,
			Resource: r.Resource, LeaseID: r.LeaseID, Client: r.Client, Mode: r.Mode, Token: r.Token, ExpiresAt: r.ExpiresAt,
			Many: r.Many, ManySize: r.ManySize, Grace: r.GraceMs * int64(time.Millisecond)})
	case faultctl.KindApply:
		h.Applied(name, group, r.Index, r.EntryHash, r.StateDigest, r.LogTime, time.Unix(0, r.At))
	case faultctl.KindWake:
		var lease lock.LeaseID
		if r.LeaseID != "" {
			id, err := lock.ParseLeaseID(r.LeaseID)
			if err != nil {
				slog.Warn("realnet: bad lease id in trace", "node", r.Node, "lease", r.LeaseID)
				return
			}
			lease = id
		}
		h.Woke(group, r.Resource, r.Index, lease, r.Woken)
	}
}

// describe is what the report keeps about the processes.
func (c *Cluster) describe() map[string]any {
	members := map[string]any{}
	for _, id := range c.order {
		m := c.byID[id]
		members[id] = map[string]any{"raft": m.raftAddr, "http": m.httpAddr, "api": m.apiAddr(), "args": c.args(m, true),
			"requests_lost_in_crashes": m.heldRequests()}
	}
	c.mu.Lock()
	failed := maps.Clone(c.failedSyncs)
	c.mu.Unlock()
	d := map[string]any{"members": members, "failed_log_syncs": failed, "link_delay": c.opts.Delay.String()}
	if c.gw != nil {
		d["gateway"] = map[string]any{"http": c.gw.httpAddr, "home": c.gw.home, "args": c.gatewayArgs(),
			"conns_by_member": c.gatewayConns()}
	}
	return d
}

// copyLogs keeps the members' logs and traces with a saved report.
func copyLogs(work, dir string) {
	if dir == "" {
		return
	}
	for _, pattern := range []string{"*.log", "*.trace"} {
		files, _ := filepath.Glob(filepath.Join(work, pattern))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil {
				_ = os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
			}
		}
	}
}
