package realnet

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/scenarios"
)

// runShort builds lockd with tags and runs Short on it.
func runShort(t *testing.T, tags []string, opts Options) *scenarios.Outcome {
	t.Helper()
	return runPinned(t, Short, tags, opts)
}

// runPinned builds lockd with tags and runs the scenario short makes.
func runPinned(t *testing.T, short func() (scenarios.Scenario, error), tags []string, opts Options) *scenarios.Outcome {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real processes; skipped with -short")
	}
	ctx := context.Background()
	bin, err := BuildLockd(ctx, t.TempDir(), tags)
	if err != nil {
		t.Fatal(err)
	}
	s, err := short()
	if err != nil {
		t.Fatal(err)
	}
	opts.Bin, opts.ResultsDir, opts.Persist = bin, t.TempDir(), true
	out, err := Run(ctx, s, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range out.Result.Violations {
		t.Logf("violation: %s", v.Message)
	}
	t.Logf("verdict %s, stats %+v, report %s", out.Result.Verdict, out.Result.Stats, out.Dir)
	return out
}

// TestShortScenario: goal — one scenario runs end to end on real lockd
// processes over real TCP and reaches the simulator's verdict (success)
// with every check fed: client operations, the committed trace from the
// members' trace files, replica comparisons and both faults recorded.
// Method: Short (3 processes, leader isolation through the proxies, leader
// kill -9 and restart) with a fixed seed; both faults must have happened.
func TestShortScenario(t *testing.T) {
	out := runShort(t, BuildTags(false), Options{Seed: 1})
	st := out.Result.Stats
	if st.Ops == 0 || st.Grants == 0 || st.TraceEvents == 0 || out.Compared == 0 {
		t.Fatalf("a part of the history is empty: ops %d grants %d trace %d replicas compared %d",
			st.Ops, st.Grants, st.TraceEvents, out.Compared)
	}
	var faults []string
	for _, f := range out.Schedule {
		faults = append(faults, f.Nemesis)
	}
	if !slices.Equal(faults, []string{"isolateLeader", "killLeader"}) {
		t.Fatalf("schedule %v", faults)
	}
	requirePerformed(t, out, faults...)
	if out.Result.Verdict != checker.Success || !out.AsExpected {
		t.Fatalf("verdict %s, want success", out.Result.Verdict)
	}
}

// TestShortShardedScenario: goal — sharded members and the gateway run on
// real processes and reach the simulator's verdict (success): every lock
// shard's committed trace is read and told apart, the leader-targeting
// faults hit lock shard 1's leader, and every client goes through a real
// lockd gateway, which reaches the members through its proxy links. Method: ShortSharded (3 processes x 3 shards, a gateway
// process, shard 1's leader isolated, then killed) with a fixed seed.
func TestShortShardedScenario(t *testing.T) {
	out := runPinned(t, ShortSharded, BuildTags(false), Options{Seed: 1})
	if out.Result.Verdict != checker.Success || !out.AsExpected {
		t.Fatalf("verdict %s, want success", out.Result.Verdict)
	}
	var trace []checker.TraceEvent
	readJSON(t, filepath.Join(out.Dir, "trace.json"), &trace)
	groups := map[int]int{}
	for _, ev := range trace {
		groups[ev.Group]++
	}
	if len(groups) != 3 || groups[1] == 0 || groups[2] == 0 || groups[3] == 0 {
		t.Fatalf("trace events by group %v, want lock shards 1, 2 and 3", groups)
	}
	requirePerformed(t, out, "isolateLeader", "killLeader")
	var rn struct {
		Gateway struct {
			ConnsByMember map[string]int64 `json:"conns_by_member"`
		}
	}
	readJSON(t, filepath.Join(out.Dir, "realnet.json"), &rn)
	through := int64(0)
	for _, n := range rn.Gateway.ConnsByMember {
		through += n
	}
	if through == 0 || out.Result.Stats.Ops == 0 {
		t.Fatalf("gateway connections through its links %v, operations %d: want both", rn.Gateway.ConnsByMember, out.Result.Stats.Ops)
	}
}

// requirePerformed fails unless every named fault has a window in the
// run's report: a step the nemesis skipped (no leader found) has none.
func requirePerformed(t *testing.T, out *scenarios.Outcome, names ...string) {
	t.Helper()
	var faults []struct{ Name, Target string }
	readJSON(t, filepath.Join(out.Dir, "faults.json"), &faults)
	for _, name := range names {
		if !slices.ContainsFunc(faults, func(f struct{ Name, Target string }) bool { return f.Name == name && f.Target != "" }) {
			t.Fatalf("faults performed %v, want %v", faults, names)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
