// Package scenarios runs the real lockstep server inside a simulated
// network under a seeded fault schedule, records every client operation and
// committed event, and checks the history. One scenario file plus one seed
// is one run: the seed fixes topology draws, workload, network decisions and
// the fault schedule. It does not fix goroutine interleaving or
// hashicorp/raft's own timer randomness (its election jitter uses the global
// math/rand), so every run saves its full history and event log, and the
// verdict can be recomputed from the saved history alone.
package scenarios

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/nemesis"
)

// Scenario is one replayable scenario file.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Groups      int    `json:"groups"`
	Nodes       int    `json:"nodes"`
	// DurationMs is the workload phase; faults end CooldownMs before it.
	DurationMs int64    `json:"duration_ms"`
	CooldownMs int64    `json:"cooldown_ms"`
	WarmupMs   int64    `json:"warmup_ms"`
	Workload   Workload `json:"workload"`
	Network    Network  `json:"network"`
	// Nemeses are drawn by the seed into a schedule, unless Schedule is set.
	Nemeses  []string         `json:"nemeses"`
	FaultMs  [2]int64         `json:"fault_ms"`
	GapMs    [2]int64         `json:"gap_ms"`
	Schedule nemesis.Schedule `json:"schedule,omitempty"`
	Checks   Checks           `json:"checks"`
	Expect   Expect           `json:"expect"`
	// Snapshots tunes how often nodes snapshot; small by default, so every
	// run takes snapshots and lagging or restarted followers install them.
	Snapshots Snapshots `json:"snapshots,omitempty"`
	// LeaderOf picks, when Groups > 1 (sharded members), the group whose
	// leader the leader-targeting nemeses hit: "meta" for the metadata
	// group, "" for lock shard 1.
	LeaderOf string `json:"leader_of,omitempty"`
	// Gateway runs the real gateway (core/gateway) as its own simulated
	// host, joined to every member, and sends every client request through
	// it alone (sharded members only).
	Gateway bool `json:"gateway,omitempty"`
	// ExactClocks runs every node's clock at exactly the true rate from a
	// whole-second origin. With a jitter-free network every time then falls
	// on a millisecond grid, so entries land exactly on lease expiries and
	// the boundary is judged: a lease is expired at its expiry instant.
	ExactClocks bool `json:"exact_clocks,omitempty"`
	// DeadlockIntervalMs runs the cross-shard deadlock detector of
	// sharded members (core/shard deadlock.go) that often; 0 leaves it off.
	DeadlockIntervalMs int64 `json:"deadlock_interval_ms,omitempty"`
}

// leaderGroup is the group number LeaderOf names on sharded members.
func (s Scenario) leaderGroup() int {
	if s.LeaderOf == leaderOfMeta {
		return 0
	}
	return 1
}

const leaderOfMeta = "meta"

// Snapshots is when the nodes of a run snapshot their state machine.
// Zero fields take the defaults of withDefaults.
type Snapshots struct {
	// Threshold is the number of entries since the last snapshot that
	// triggers one; TrailingLogs are kept after it, so a follower further
	// behind than that is sent the snapshot.
	Threshold    uint64 `json:"threshold,omitempty"`
	TrailingLogs uint64 `json:"trailing_logs,omitempty"`
	IntervalMs   int64  `json:"interval_ms,omitempty"`
}

func (s Snapshots) withDefaults() Snapshots {
	if s.Threshold == 0 {
		s.Threshold = 64
	}
	if s.TrailingLogs == 0 {
		s.TrailingLogs = 16
	}
	if s.IntervalMs == 0 {
		s.IntervalMs = 500
	}
	return s
}

// Network is the simulated network's behaviour on every link.
type Network struct {
	LatencyMs  float64 `json:"latency_ms"`
	JitterMs   float64 `json:"jitter_ms"`
	Drop       float64 `json:"drop"`
	Dup        float64 `json:"dup"`
	RPCTimeout int64   `json:"rpc_timeout_ms"`
}

// Checks tune the checker for this scenario.
type Checks struct {
	StrictFIFO      bool  `json:"strict_fifo"`
	AllowHerd       bool  `json:"allow_herd"`
	RecoveryBoundMs int64 `json:"recovery_bound_ms"`
	GrantBoundMs    int64 `json:"grant_bound_ms"`
	ElectionBoundMs int64 `json:"election_bound_ms"`
	// ExpiryBoundMs: how late (log time) past a lease's expiry the first
	// entry may come in a quiet period; 0 leaves that half out. Scenarios
	// that lose messages allow an RPC timeout more: one lost
	// AppendEntries stalls the leader's commits that long, fault or not.
	ExpiryBoundMs int64 `json:"expiry_bound_ms,omitempty"`
	// ShardP99BoundMs bounds, on sharded members, each lock shard's p99
	// latency of non-waiting acquires, except the shards in
	// ShardP99Exclude (those the faults aim at); 0 leaves it unjudged.
	ShardP99BoundMs int64 `json:"shard_p99_bound_ms,omitempty"`
	ShardP99Exclude []int `json:"shard_p99_exclude,omitempty"`
	// DeadlockBoundMs: how long (log time) a wait-for cycle inside one
	// group may stand (checker.CheckDeadlock); 0 leaves it unjudged.
	DeadlockBoundMs int64 `json:"deadlock_bound_ms,omitempty"`
	// CrossDeadlockBoundMs: checker.Options.CrossDeadlockBound (virtual
	// time); 0 leaves the cross-shard detector unjudged.
	CrossDeadlockBoundMs int64 `json:"cross_deadlock_bound_ms,omitempty"`
}

// Expect is the verdict a correct server must produce. Most scenarios
// expect success; a data-loss scenario expects the checker to flag lost
// state.
type Expect struct {
	Verdict checker.Verdict `json:"verdict"`
	// Checks, when the verdict is failure, must each report a violation.
	Checks []string `json:"checks,omitempty"`
}

func (s Scenario) options() checker.Options {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	o := checker.Options{
		StrictFIFO: s.Checks.StrictFIFO, AllowHerd: s.Checks.AllowHerd,
		RecoveryBound: ms(s.Checks.RecoveryBoundMs), GrantBound: ms(s.Checks.GrantBoundMs),
		ElectionBound: ms(s.Checks.ElectionBoundMs), ExpiryBound: ms(s.Checks.ExpiryBoundMs),
		DeadlockBound: ms(s.Checks.DeadlockBoundMs), CrossDeadlockBound: ms(s.Checks.CrossDeadlockBoundMs),
		// Groups > 1 are sharded members placing by core/placement.
		Shards: s.Groups,
	}
	if s.Groups > 1 && s.Checks.ShardP99BoundMs > 0 {
		o.ShardLatency = checker.ShardLatency{Shards: s.Groups, Excluded: s.Checks.ShardP99Exclude,
			Bound: ms(s.Checks.ShardP99BoundMs), Quantile: 0.99}
	}
	return o
}

// Validate reports the first thing that makes the file unusable.
func (s Scenario) Validate() error {
	switch {
	case s.Name == "":
		return fmt.Errorf("scenario has no name")
	case s.Groups < 1 || s.Groups > 8 || s.Nodes < 1 || s.Nodes > 7:
		return fmt.Errorf("%s: groups must be 1..8 and nodes 1..7", s.Name)
	case s.Workload.Clients < 1 || s.Workload.Clients > 200 || s.Workload.Resources < 1:
		return fmt.Errorf("%s: clients must be 1..200 and resources >= 1", s.Name)
	case s.DurationMs <= 0 || s.DurationMs > 600_000:
		return fmt.Errorf("%s: duration_ms must be in 1..600000", s.Name)
	case s.Expect.Verdict != checker.Success && s.Expect.Verdict != checker.Failure:
		return fmt.Errorf("%s: expect.verdict must be success or failure", s.Name)
	case s.LeaderOf != "" && (s.LeaderOf != leaderOfMeta || s.Groups < 2):
		return fmt.Errorf("%s: leader_of must be empty or %q, with groups > 1", s.Name, leaderOfMeta)
	case s.Gateway && s.Groups < 2:
		return fmt.Errorf("%s: gateway needs sharded members (groups > 1)", s.Name)
	}
	for _, n := range s.Nemeses {
		if _, ok := nemesis.ByName(n); !ok {
			return fmt.Errorf("%s: unknown nemesis %q", s.Name, n)
		}
	}
	return s.Schedule.Validate()
}

//go:embed defs/*.json
var defs embed.FS

// All returns the scenario catalogue, sorted by name.
func All() ([]Scenario, error) {
	entries, err := fs.ReadDir(defs, "defs")
	if err != nil {
		return nil, err
	}
	var out []Scenario
	for _, e := range entries {
		b, err := defs.ReadFile(path.Join("defs", e.Name()))
		if err != nil {
			return nil, err
		}
		s, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if want := strings.TrimSuffix(e.Name(), ".json"); s.Name != want {
			return nil, fmt.Errorf("%s: name %q must match the file name", e.Name(), s.Name)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Scenario) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ByName finds a scenario in the catalogue.
func ByName(name string) (Scenario, error) {
	all, err := All()
	if err != nil {
		return Scenario{}, err
	}
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	return Scenario{}, fmt.Errorf("no scenario %q", name)
}

// Parse reads a scenario file strictly.
func Parse(b []byte) (Scenario, error) {
	var s Scenario
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, err
	}
	return s, s.Validate()
}

// BugScenarios maps each bug mode to the scenario that should expose it.
var BugScenarios = map[node.Bug]string{
	node.BugFollowerGrant:   "networkPartition",
	node.BugLocalRenew:      "leaderCrash",
	node.BugWallClockExpiry: "clockSkew",
	node.BugTokenInMemory:   "leaderCrash",
	node.BugQueueInMemory:   "leaderThrash",
	// Bugs the testbed found, put back (see regressions/).
	node.BugForgetSettled:        "leaderCrash",
	node.BugOrphanWaiters:        "orphanWaiters",
	node.BugReleaseOnGiveUp:      "sharedExclusiveMix",
	node.BugUnknownAsUnavailable: "networkPartition",
	node.BugStaleValidate:        "networkPartition",
	node.BugPermitOvercount:      "semaphore",
	node.BugDeadlockMiss:         "deadlockCycles",
	node.BugDeadlockMissCross:    "deadlockCyclesSharded",
	node.BugGraceReviveRegranted: "graceWindow",
}
