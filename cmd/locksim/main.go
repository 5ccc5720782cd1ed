// Command locksim runs lockstep's replayable failure scenarios in virtual
// time: one scenario file plus one seed is one run.
//
//	locksim -list
//	locksim -scenario leaderCrash -seed 42
//	locksim -all -seeds 1..10
//	locksim -scenario leaderCrash -seeds 1..50 -bug local-renew
//	locksim -deterministic -scenario leaderCrash -seed 42
//
// With -deterministic every (scenario, seed) runs in its own wasm guest
// whose entropy and clock derive from the seed (deterministic.go), so the
// same command prints the same bytes and saves the same report.
//
// Each run prints SEED= and every derived parameter first, then PASSED, or
// the verdict and the exact command that replays it, and "report: DIR" for
// every run that saved a report: one that did not succeed, was unexpected,
// or ran with -persist. DIR is <results>/<scenario>/<seed>[-<bug>], with
// -results defaulting to the git-ignored results/tmp/sim (relative to the
// working directory, normally the repository root); the committed examples
// under results/sim/ change only with -results results/sim.
// Exit codes tell failures apart: 0 every run as expected, 127 the harness
// crashed, 128 only liveness checks failed, 129 a correctness check failed,
// 130 a check could not finish (never counted as a pass), 131 a
// deterministic run replayed differently (-check, -replays). A run whose
// virtual time stands still for -stall of wall time (a goroutine that never
// blocks) is reported stalled with a goroutine dump and exits 128.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/scenarios"
)

type options struct {
	scenario string
	all      bool
	list     bool
	seedLo   int64
	seedHi   int64
	bug      node.Bug
	results  string
	persist  bool
	stopOn   bool
	// check re-judges a saved run directory instead of running anything.
	check string
	// bugTable runs every bug mode on its scenario, this many sweeps.
	bugTable    int
	bugSeedsMax int64
	// deterministic runs every (scenario, seed) in a fresh wasm guest whose
	// entropy and clock derive from the seed (deterministic.go).
	deterministic bool
	wasm          string
	jobs          int
	// replays runs each deterministic run this many times and compares
	// the output and saved files byte for byte (replay.go).
	replays int
	// prepare builds and compiles the guest, filling the caches, and exits.
	prepare bool
	// guest: this process is that wasm guest, running one (scenario,
	// seed) for the host; it prints no summary line.
	guest bool
	// stall is how long a run's virtual time may stand still (wall time)
	// before the watchdog reports it stalled (watchdog.go); 0: never.
	stall time.Duration
	// cpuProfile and memProfile name pprof files for a native run
	// (profile.go).
	cpuProfile string
	memProfile string
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "locksim:", err)
		os.Exit(2)
	}
	if opts.check != "" {
		os.Exit(recheckReplay(context.Background(), opts, os.Stdout, os.Stderr))
	}
	if opts.prepare {
		os.Exit(prepareGuest(context.Background(), opts, os.Stderr))
	}
	if opts.deterministic && !opts.guest {
		os.Exit(runDeterministic(context.Background(), opts, os.Stdout, os.Stderr))
	}
	if opts.list {
		all, err := scenarios.All()
		if err != nil {
			fmt.Fprintln(os.Stderr, "locksim:", err)
			os.Exit(scenarios.ExitCrash)
		}
		for _, s := range all {
			fmt.Printf("%-18s %s\n", s.Name, s.Description)
		}
		return
	}
	if !opts.guest {
		tuneNativeRuntime()
	}
	stopProfiles, err := startProfiles(opts.cpuProfile, opts.memProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "locksim:", err)
		os.Exit(2)
	}
	exit := func(code int) {
		if err := stopProfiles(); err != nil {
			fmt.Fprintln(os.Stderr, "locksim:", err)
			code = max(code, scenarios.ExitCrash)
		}
		os.Exit(code)
	}
	// synctest bubbles need a *testing.T: run the sweep as the only test of
	// a testing.Main, and leave with our own exit code.
	os.Args = []string{os.Args[0], "-test.v=false"}
	testing.Init()
	testing.Main(func(_, _ string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "locksim", F: func(t *testing.T) {
			if opts.bugTable > 0 {
				exit(bugTable(t, opts, os.Stdout, os.Stderr))
			}
			exit(sweep(t, opts, os.Stdout))
		}}}, nil, nil)
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("locksim", flag.ContinueOnError)
	fs.StringVar(&o.scenario, "scenario", "", "scenario name (see -list)")
	fs.BoolVar(&o.all, "all", false, "run every scenario")
	fs.BoolVar(&o.list, "list", false, "list scenarios and exit")
	fs.StringVar(&o.check, "check", "", "re-check the saved run in this directory (its history alone) and exit")
	seed := fs.Int64("seed", 0, "one seed (0: draw one)")
	seeds := fs.String("seeds", "", "seed range a..b")
	bug := fs.String("bug", "", "server bug mode: "+bugNames())
	fs.StringVar(&o.results, "results", scenarios.DefaultResultsDir,
		"reports go to `dir`/<scenario>/<seed>[-<bug>]/; the default is git-ignored, give results/sim to update the committed examples")
	fs.BoolVar(&o.persist, "persist", false, "write the report of every run, not only failures")
	fs.BoolVar(&o.stopOn, "stop-on-violation", false, "with -bug: stop a scenario's sweep at its first violation")
	fs.IntVar(&o.bugTable, "bug-table", 0, "run N sweeps of every bug mode on its scenario and print seeds-to-detection")
	fs.Int64Var(&o.bugSeedsMax, "bug-seeds", 50, "with -bug-table: seeds per sweep before giving up")
	fs.BoolVar(&o.deterministic, "deterministic", false,
		"run each (scenario, seed) inside a wasm guest whose entropy and time derive from the seed: replays byte for byte, ~10x slower")
	fs.StringVar(&o.wasm, "wasm", "", "with -deterministic: the locksim.wasm to run (default: built on first use, cached by source hash)")
	fs.IntVar(&o.jobs, "jobs", runtime.NumCPU(), "with -deterministic: runs in parallel (each run is still a pure function of its seed)")
	fs.IntVar(&o.replays, "replays", 1, "with -deterministic: run each (scenario, seed) N times and compare stdout and saved files byte for byte")
	fs.BoolVar(&o.prepare, "prepare", false, "with -deterministic: build and compile the guest into the caches, then exit (make test runs it before the race-enabled tests)")
	fs.DurationVar(&o.stall, "stall", time.Minute,
		"report a run whose virtual time stands still this long (wall time) as stalled, save a goroutine dump and exit 128; 0 waits forever")
	fs.BoolVar(&o.guest, "guest", false, "internal: this process is the wasm guest of -deterministic")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the native runs to `file` (go tool pprof)")
	fs.StringVar(&o.memProfile, "memprofile", "", "write an allocation profile of the native runs to `file` (go tool pprof -sample_index=alloc_space)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.bug = node.Bug(*bug)
	if (o.bug != "" || o.bugTable > 0) && len(node.Bugs) == 0 {
		return o, node.ErrNoBugModes
	}
	if o.bug != "" && !slices.Contains(node.Bugs, o.bug) {
		return o, fmt.Errorf("-bug %q: unknown bug mode (known: %s)", o.bug, bugNames())
	}
	switch {
	case *seeds != "":
		var err error
		if o.seedLo, o.seedHi, err = scenarios.ParseSeedRange(*seeds); err != nil {
			return o, err
		}
	case *seed != 0:
		o.seedLo, o.seedHi = *seed, *seed
	default:
		s := time.Now().UnixNano() % 1_000_000_000
		o.seedLo, o.seedHi = s, s
	}
	if !o.list && !o.all && o.scenario == "" && o.bugTable == 0 && o.check == "" && !o.prepare {
		return o, fmt.Errorf("give -scenario NAME, -all, -bug-table N, -check DIR or -list")
	}
	if o.guest && runtime.GOOS != "wasip1" {
		return o, fmt.Errorf("-guest: only the wasm guest of -deterministic takes it")
	}
	if o.deterministic && o.bugTable > 0 {
		return o, fmt.Errorf("-bug-table runs natively only; give -deterministic=false")
	}
	if o.replays < 1 || (o.replays > 1 && !o.deterministic) {
		return o, fmt.Errorf("-replays %d: want 1, or more with -deterministic", o.replays)
	}
	if o.jobs < 1 {
		return o, fmt.Errorf("-jobs %d: want at least 1", o.jobs)
	}
	if (o.cpuProfile != "" || o.memProfile != "") && (o.deterministic || o.guest || o.check != "" || o.list || o.prepare) {
		return o, fmt.Errorf("-cpuprofile and -memprofile profile native runs (-scenario, -all, -bug-table) only, not -deterministic, -check, -list or -prepare")
	}
	return o, nil
}

func bugNames() string {
	var s []string
	for _, b := range node.Bugs {
		s = append(s, string(b))
	}
	return strings.Join(s, ", ")
}

// sweep runs every selected (scenario, seed), prints to w and returns the
// exit code.
func sweep(t *testing.T, o options, w io.Writer) int {
	all, err := scenarios.All()
	if err != nil {
		fmt.Fprintln(os.Stderr, "locksim:", err)
		return scenarios.ExitCrash
	}
	code, runs, bad := scenarios.ExitOK, 0, 0
	for _, s := range all {
		if !o.all && s.Name != o.scenario {
			continue
		}
		for seed := o.seedLo; seed <= o.seedHi; seed++ {
			runs++
			c := runOne(t, s, seed, o, w)
			if c != scenarios.ExitOK {
				bad++
				code = max(code, c)
			}
			if o.stopOn && o.bug != "" && c == scenarios.ExitOK {
				fmt.Fprintf(w, "VIOLATION FOUND scenario=%s bug=%s seeds_tried=%d\n", s.Name, o.bug, seed-o.seedLo+1)
				break
			}
		}
	}
	if runs == 0 {
		fmt.Fprintf(os.Stderr, "locksim: no scenario %q\n", o.scenario)
		return scenarios.ExitCrash
	}
	if !o.guest {
		fmt.Fprintf(w, "%d runs, %d not as expected\n", runs, bad)
	}
	return code
}

func runOne(t *testing.T, s scenarios.Scenario, seed int64, o options, w io.Writer) int {
	var out *scenarios.Outcome
	var runErr error
	var progress *atomic.Int64
	if !o.guest {
		progress = new(atomic.Int64)
		// A guest's clock is the host's to watch.
		defer watchStall(progress, o.stall, func(virtual, wall time.Duration) {
			// The stalled goroutine cannot be stopped: report and leave.
			os.Exit(reportStall(w, s, seed, o, virtual, wall))
		})()
	}
	wall := time.Now()
	t.Run(fmt.Sprintf("%s/%d", s.Name, seed), func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			out, runErr = scenarios.Run(context.Background(), s, scenarios.RunOptions{
				Seed: seed, Bug: o.bug, ResultsDir: o.results, Persist: o.persist, Deterministic: o.guest,
				Progress: progress,
			})
		})
	})
	return printOutcome(w, s, seed, o, out, runErr, time.Since(wall))
}

// printOutcome prints one run's parameters and verdict and returns its
// exit code.
func printOutcome(w io.Writer, s scenarios.Scenario, seed int64, o options, out *scenarios.Outcome, runErr error, wall time.Duration) int {
	replay := scenarios.ReplayCommand(s.Name, seed, o.bug)
	if o.guest {
		replay += " -deterministic"
	}
	if runErr != nil || out == nil {
		fmt.Fprintf(w, "SEED=%d scenario=%s CRASH: %v\nreplay: %s\n", seed, s.Name, runErr, replay)
		return scenarios.ExitCrash
	}
	for _, p := range out.Params {
		fmt.Fprintf(w, "%s=%s\n", p.Name, p.Value)
	}
	st := out.Result.Stats
	// A guest's clock is fake: its wall time would be a deterministic
	// number that means nothing, so the host reports real time on stderr.
	speed := fmt.Sprintf(" wall=%s speedup=%.0fx", wall.Round(time.Millisecond), out.Virtual.Seconds()/wall.Seconds())
	if o.guest {
		speed = ""
	}
	fmt.Fprintf(w, "virtual=%s%s ops=%d unknown=%d grants=%d inversions=%d snapshots=%d restores=%d replicas_compared=%d queues_compared=%d expiries_judged=%d\n",
		out.Virtual.Round(time.Millisecond), speed, st.Ops, st.UnknownOps, st.Grants, st.Inversions,
		out.Snapshots, out.Restores, out.Compared, st.QueuesCompared, st.ExpiriesJudged)
	// Every saved report is named, whatever the verdict, so nobody has to
	// guess the directory layout.
	printDir := func() {
		if out.Dir != "" {
			fmt.Fprintf(w, "report: %s\n", out.Dir)
		}
	}
	if o.bug != "" {
		// In a bug sweep a violation is the expected outcome.
		if out.AsExpected {
			fmt.Fprintf(w, "CAUGHT %s: %s\n", o.bug, out.Result.Violations[0].Message)
			printDir()
			fmt.Fprintf(w, "replay: %s\n\n", replay)
			return scenarios.ExitOK
		}
		fmt.Fprintf(w, "NOT CAUGHT %s (verdict %s)\n", o.bug, out.Result.Verdict)
		printDir()
		fmt.Fprintln(w)
		return scenarios.ExitCorrectness
	}
	if out.AsExpected {
		fmt.Fprintf(w, "PASSED (verdict %s as expected)\n", out.Result.Verdict)
		printDir()
		fmt.Fprintln(w)
		return scenarios.ExitOK
	}
	fmt.Fprintf(w, "UNEXPECTED verdict %s (expected %s)\n", out.Result.Verdict, s.Expect.Verdict)
	for _, v := range out.Result.Violations {
		fmt.Fprintf(w, "  %s\n", v.Message)
	}
	printDir()
	fmt.Fprintf(w, "replay: %s\n\n", replay)
	return scenarios.ExitCode(out.Result)
}

// bugTable measures how many seeds each bug mode's scenario needs to
// report a violation, over several sweeps with disjoint seed ranges, and
// prints a Markdown table to w (report directories go to diag, keeping w
// a clean table). A sweep that never catches the bug fails the run.
func bugTable(t *testing.T, o options, w, diag io.Writer) int {
	fmt.Fprintln(w, "| bug | scenario | seeds to detection, per sweep | first violation (sweep 1) |")
	fmt.Fprintln(w, "|---|---|---|---|")
	code := scenarios.ExitOK
	for _, bug := range node.Bugs {
		s, err := scenarios.ByName(scenarios.BugScenarios[bug])
		if err != nil {
			fmt.Fprintln(os.Stderr, "locksim:", err)
			return scenarios.ExitCrash
		}
		var counts []string
		first := ""
		for sweep := 0; sweep < o.bugTable; sweep++ {
			start := int64(sweep)*1000 + 1
			found := int64(0)
			for seed := start; seed < start+o.bugSeedsMax && found == 0; seed++ {
				var out *scenarios.Outcome
				t.Run(fmt.Sprintf("%s/%s/%d", bug, s.Name, seed), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						out, _ = scenarios.Run(context.Background(), s, scenarios.RunOptions{Seed: seed, Bug: bug, ResultsDir: o.results})
					})
				})
				if out != nil && out.Dir != "" {
					fmt.Fprintf(diag, "report: %s\n", out.Dir)
				}
				if out != nil && out.AsExpected {
					found = seed - start + 1
					if first == "" {
						first = fmt.Sprintf("`%s` (seed %d)", truncate(out.Result.Violations[0].Message, 90), seed)
					}
				}
			}
			if found == 0 {
				counts = append(counts, fmt.Sprintf("not found in %d", o.bugSeedsMax))
				code = scenarios.ExitCorrectness
			} else {
				counts = append(counts, fmt.Sprint(found))
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", bug, s.Name, strings.Join(counts, ", "), first)
	}
	return code
}

func truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "|", "/")
	s = strings.ReplaceAll(s, "`", "'")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// recheck re-judges a saved run and says whether it reaches the verdict it
// was saved with; the exit code is that of the fresh verdict.
func recheck(w io.Writer, dir string) int {
	res, saved, err := scenarios.Recheck(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(w, "locksim:", err)
		return scenarios.ExitCrash
	}
	fmt.Fprintf(w, "SEED=%d scenario=%s bug=%s\n", saved.Seed, saved.Scenario, saved.Bug)
	for _, v := range res.Violations {
		fmt.Fprintf(w, "  %s\n", v.Message)
	}
	same := "same as saved"
	if res.Verdict != saved.Result.Verdict || len(res.Violations) != len(saved.Result.Violations) {
		same = fmt.Sprintf("DIFFERS from saved verdict %s (%d violations)", saved.Result.Verdict, len(saved.Result.Violations))
	}
	fmt.Fprintf(w, "verdict %s (%d violations): %s\n", res.Verdict, len(res.Violations), same)
	if res.Verdict == checker.Success {
		return scenarios.ExitOK
	}
	return scenarios.ExitCode(res)
}
