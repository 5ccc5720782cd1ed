package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/node"
)

// bins holds the node binaries built once for the end-to-end tests.
var bins string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "maelstrom-bins")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildMu serialises builds: parallel tests share the binaries.
var buildMu sync.Mutex

// binary builds ./cmd/<name> (once) and returns its path. Under -race the
// nodes are built with -race too: that reuses the packages the test build
// already compiled, and races in the node code then fail the node.
func binary(t *testing.T, names ...string) []string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	var paths, missing []string
	for _, n := range names {
		paths = append(paths, filepath.Join(bins, n))
		if _, err := os.Stat(filepath.Join(bins, n)); err != nil {
			missing = append(missing, "./cmd/"+n)
		}
	}
	if len(missing) > 0 {
		args := []string{"build", "-o", bins + string(filepath.Separator)}
		if raceEnabled {
			args = append(args, "-race")
		}
		if len(node.Bugs) > 0 {
			args = append(args, "-tags", "lockstep_bugs") // this test build has them
		}
		cmd := exec.Command("go", append(args, missing...)...)
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", missing, err, out)
		}
	}
	return paths
}

// e2eOptions is a short run: 3 nodes, partitions every ~1.5 s, a quiet
// last 1.5 s.
func e2eOptions(t *testing.T, workload, bin string, seed int64, limit time.Duration) Options {
	dir := t.TempDir()
	return Options{
		Workload: workload, Bin: bin, NodeCount: 3, TimeLimit: limit, Rate: 30, Concurrency: 6,
		Latency: 5 * time.Millisecond, LatencyDist: LatencyExponential, Nemesis: []string{"partition"},
		NemesisInterval: 1500 * time.Millisecond, Recovery: 1500 * time.Millisecond, OpTimeout: 3 * time.Second,
		Seed: seed, Keys: 3, Dir: filepath.Join(dir, "run"), LogDir: filepath.Join(dir, "logs"), CheckTimeout: 30 * time.Second,
	}
}

func runOK(t *testing.T, opts Options) *Verdict {
	t.Helper()
	v, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("run: %v (logs in %s)", err, opts.LogDir)
	}
	t.Logf("%s: ok=%d fail=%d info=%d faults=%d result=%s", opts.Workload, v.OK, v.Fail, v.Info, v.Faults, v.Result)
	for _, f := range []string{"history.json", "verdict.json", "history.html"} {
		if _, err := os.Stat(filepath.Join(opts.Dir, f)); err != nil {
			t.Errorf("run wrote no %s: %v", f, err)
		}
	}
	return v
}

// TestRunnerJudgesIndependentNodes shows the runner judging binaries it
// did not come with. Goal: it passes a correct single-copy lin-kv node and
// flags one that reads from a stale local copy. Method: both tiny test
// nodes (standard library only) under the same short lin-kv run.
func TestRunnerJudgesIndependentNodes(t *testing.T) {
	t.Parallel()
	paths := binary(t, "maelstrom-testnode-single", "maelstrom-testnode-stale")
	opts := e2eOptions(t, WorkloadLinKV, paths[0], 7, 4*time.Second)
	if v := runOK(t, opts); v.Result != Valid || v.OK < 10 {
		t.Errorf("single-copy node: %s with %d ok ops, want valid with >= 10 (%v)", v.Result, v.OK, v.Violations)
	}
	opts = e2eOptions(t, WorkloadLinKV, paths[1], 7, 3*time.Second)
	opts.Nemesis = nil // the stale reads need no help
	if v := runOK(t, opts); v.Result != Invalid {
		t.Errorf("stale-read node: %s, want invalid", v.Result)
	}
}

// TestLockstepUnderPartitions is CI's short Maelstrom run of lockstep.
// Goal: both workloads pass against maelstrom-lockstep under partitions
// with real progress. Method: 3 nodes, 5 s each, partitions on.
func TestLockstepUnderPartitions(t *testing.T) {
	t.Parallel()
	bin := binary(t, "maelstrom-lockstep")[0]
	for _, w := range []string{WorkloadLinKV, WorkloadLock} {
		v := runOK(t, e2eOptions(t, w, bin, 11, 5*time.Second))
		if v.Result != Valid || v.OK < 20 || v.Faults == 0 {
			t.Errorf("%s: %s with %d ok ops and %d partitions, want valid with >= 20 ok and >= 1 partition (%v %v)",
				w, v.Result, v.OK, v.Faults, v.Violations, v.Notes)
		}
	}
}

// TestLockstepBugFlagged shows the lock checks failing on a broken lock
// service. Goal: with core/node's follower-grant bug on (followers grant
// from their own stale state), the runner reports a violation. Method: the
// same lock run as CI's, with -bug follower-grant passed to every node.
func TestLockstepBugFlagged(t *testing.T) {
	if len(node.Bugs) == 0 {
		t.Skip("bug modes need -tags lockstep_bugs (make test runs that pass too)")
	}
	t.Parallel()
	bin := binary(t, "maelstrom-lockstep")[0]
	opts := e2eOptions(t, WorkloadLock, bin, 11, 4*time.Second)
	opts.BinArgs = []string{"-bug", "follower-grant"}
	if v := runOK(t, opts); v.Result != Invalid {
		t.Errorf("follower-grant: %s, want invalid", v.Result)
	}
}

// TestHarnessError checks that a node that dies is a harness error, not a
// verdict. Method: a "node" that exits at once.
func TestHarnessError(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	opts := e2eOptions(t, WorkloadLinKV, sh, 1, time.Second)
	opts.BinArgs = []string{"-c", "exit 3"}
	if _, err := Run(context.Background(), opts); err == nil {
		t.Fatal("a node that exits at once did not fail the run")
	}
}
