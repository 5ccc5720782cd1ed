package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/nemesis"
	"github.com/lockstep/lockstep/sim"
)

// DefaultResultsDir is where run reports go unless a caller says otherwise,
// relative to the repository root. It is git-ignored, so runs never touch
// the curated reports committed under results/sim/, which are written only
// by naming that directory explicitly.
const DefaultResultsDir = "results/tmp/sim"

// RunOptions select what a run does besides the scenario itself.
type RunOptions struct {
	Seed int64
	// Bug turns on one deliberate server mistake (bug-mode sweeps).
	Bug node.Bug
	// ResultsDir receives the report of a run that was unexpected or did
	// not succeed (or of every run with Persist) in RunDir; "" saves none.
	ResultsDir string
	Persist    bool
}

// Outcome is what one run produced.
type Outcome struct {
	Scenario string   `json:"scenario"`
	Seed     int64    `json:"seed"`
	Bug      node.Bug `json:"bug,omitempty"`
	Params   []Param  `json:"params"`
	// Checks are the checker options the run was judged with, so that a
	// saved run re-checks the same way (locksim -check).
	Checks   checker.Options  `json:"checks"`
	Schedule nemesis.Schedule `json:"schedule"`
	Result   checker.Result   `json:"result"`
	// AsExpected: the verdict matches the scenario's expectation (for a
	// bug run: the checker found a violation).
	AsExpected bool          `json:"as_expected"`
	Virtual    time.Duration `json:"virtual_ns"`
	Network    sim.Stats     `json:"network"`
	// Snapshots and Restores count state machine snapshots taken and
	// restored on all nodes; Compared counts replica comparisons.
	Snapshots uint64 `json:"snapshots"`
	Restores  uint64 `json:"restores"`
	Compared  int    `json:"replicas_compared"`
	// Dir is the directory the report was saved in; empty if none was.
	Dir   string   `json:"dir,omitempty"`
	Files []string `json:"files,omitempty"`
}

// Param is one derived run parameter, printed before the run starts.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Run executes one scenario with one seed. It must run inside a
// testing/synctest bubble: all time is virtual.
func Run(ctx context.Context, s Scenario, opts RunOptions) (*Outcome, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	rs := DeriveSeeds(opts.Seed)
	netSeed, clusterSeed, workSeed, schedSeed, nemSeed := rs.Network, rs.Cluster, rs.Workload, rs.Schedule, rs.Nemesis
	out := &Outcome{Scenario: s.Name, Seed: opts.Seed, Bug: opts.Bug}

	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	rpcTimeout := time.Duration(max(s.Network.RPCTimeout, 500)) * time.Millisecond
	rec := newRecorder()
	net := sim.NewNetwork(sim.Options{
		Seed: netSeed, RPCTimeout: rpcTimeout, CallTimeout: time.Second,
		Link: sim.Link{LatencyBase: ms(s.Network.LatencyMs), LatencyJitter: ms(s.Network.JitterMs),
			DropRate: s.Network.Drop, DupRate: s.Network.Dup},
	})
	defer net.Close()
	c, err := newCluster(net, rec, clusterOptions{groups: s.Groups, nodes: s.Nodes, seed: clusterSeed, bug: opts.Bug, snap: s.Snapshots})
	if err != nil {
		return nil, err
	}
	defer c.Shutdown()
	wl, err := newWorkload(s.Workload, c, rec, workSeed)
	if err != nil {
		return nil, err
	}
	c.work = wl
	if err := c.awaitLeaders(ctx, 30*time.Second); err != nil {
		return nil, err
	}

	duration := time.Duration(s.DurationMs) * time.Millisecond
	out.Schedule = s.DrawSchedule(rs)
	out.Params = params(s, opts, out.Schedule, netSeed, workSeed, schedSeed, nemSeed)

	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	var wg sync.WaitGroup
	var nemErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		wl.run(runCtx)
	}()
	go func() {
		defer wg.Done()
		nemErr = nemesis.Run(runCtx, c, out.Schedule, rand.New(rand.NewPCG(nemSeed, 2)), rec)
		c.clearFaults()
	}()
	wg.Wait()
	c.clearFaults()
	out.Virtual = time.Since(start)
	if nemErr != nil && runCtx.Err() == nil {
		return nil, fmt.Errorf("nemesis: %w", nemErr)
	}
	// Members stop one by one, so the last entries commit late: their log
	// times say nothing about how promptly the cluster expires leases.
	rec.closeEntries()
	c.Shutdown()
	out.Network = net.Stats()
	out.Snapshots, out.Restores = c.snapshots.Load(), c.restores.Load()

	h := rec.history(opts.Seed, s.Name)
	h.Notes = map[string]string{"bug": string(opts.Bug)}
	out.Compared = h.Replicas.Compared
	out.Checks = s.options()
	out.Result = checker.Check(ctx, h, out.Checks)
	out.AsExpected = Expected(s, opts.Bug, out.Result)
	if !out.AsExpected || out.Result.Verdict != checker.Success || opts.Persist {
		if err := out.save(ctx, opts, h, net); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Expected compares a verdict with what the scenario (or bug mode) expects.
func Expected(s Scenario, bug node.Bug, res checker.Result) bool {
	if bug != "" {
		return res.Verdict == checker.Failure
	}
	if res.Verdict != s.Expect.Verdict {
		return false
	}
	for _, want := range s.Expect.Checks {
		if !slices.ContainsFunc(res.Violations, func(v checker.Violation) bool { return v.Check == want }) {
			return false
		}
	}
	return true
}

func (c *Cluster) awaitLeaders(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for g := range c.groups {
		for {
			led := false
			for _, m := range c.groups[g] {
				if n := c.node(m.id); n != nil && n.IsLeader() {
					led = true
				}
			}
			if led {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("group %d elected no leader within %s", g+1, limit)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

func params(s Scenario, opts RunOptions, sched nemesis.Schedule, seeds ...uint64) []Param {
	p := []Param{
		{"SEED", fmt.Sprint(opts.Seed)},
		{"scenario", s.Name},
		{"bug", string(opts.Bug)},
		{"groups", fmt.Sprint(s.Groups)},
		{"nodes_per_group", fmt.Sprint(s.Nodes)},
		{"clients", fmt.Sprint(s.Workload.Clients)},
		{"resources", fmt.Sprint(s.Workload.Resources)},
		{"duration", (time.Duration(s.DurationMs) * time.Millisecond).String()},
		{"network", fmt.Sprintf("latency %.1fms jitter %.1fms drop %.3f dup %.3f", s.Network.LatencyMs, s.Network.JitterMs, s.Network.Drop, s.Network.Dup)},
		{"seeds(net,work,schedule,nemesis)", fmt.Sprint(seeds)},
	}
	for i, st := range sched {
		p = append(p, Param{fmt.Sprintf("fault[%d]", i), fmt.Sprintf("%s at %s for %s", st.Nemesis, st.At, st.Duration)})
	}
	return p
}

// save writes the report and the run's own files under
// <ResultsDir>/<scenario>/<seed>[-<bug>]/.
func (o *Outcome) save(ctx context.Context, opts RunOptions, h *checker.History, net *sim.Network) error {
	if opts.ResultsDir == "" {
		return nil
	}
	return SaveReport(ctx, opts.ResultsDir, o, h, map[string]any{"network-events": net.Events()})
}

// RunDir is where a run's report goes: <resultsDir>/<scenario>/<seed>, with
// -<bug> appended for a bug-mode run.
func RunDir(resultsDir, scenario string, seed int64, bug node.Bug) string {
	name := fmt.Sprint(seed)
	if bug != "" {
		name += "-" + string(bug)
	}
	return filepath.Join(resultsDir, scenario, name)
}

// ReplayCommand is the one command that re-runs a seed.
func ReplayCommand(scenario string, seed int64, bug node.Bug) string {
	cmd := fmt.Sprintf("go run ./cmd/locksim -scenario %s -seed %d", scenario, seed)
	if bug != "" {
		cmd += " -bug " + string(bug)
	}
	return cmd
}
