// Command maelstrom-run does Maelstrom's job for any Maelstrom node binary:
// it spawns the nodes, routes their messages with latency and partitions,
// drives a workload, records the history and checks it. Flag names mirror
// maelstrom test:
//
//	maelstrom-run -w lin-kv --bin ./maelstrom-lockstep --node-count 3 --time-limit 20 --nemesis partition
//
// Results go to results/maelstrom/<workload>-n<N>-seed<S>/. Exit status: 0
// valid, 1 invalid (a violation; the replay command is printed), 2 bad
// usage, 3 inconclusive (a check timed out), 4 harness error (a node did
// not start, answer init or stay up).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep/lockstep/maelstrom/runner"
)

var defaultOut = filepath.Join("results", "maelstrom")

const (
	exitValid = iota
	exitInvalid
	exitUsage
	exitUnknown
	exitHarness
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("maelstrom-run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Int64("seed", 0, "seed for every choice the runner makes (0 draws one)")
	workload := fs.String("workload", runner.WorkloadLinKV, "workload: lin-kv or lock")
	fs.StringVar(workload, "w", runner.WorkloadLinKV, "shorthand for --workload")
	bin := fs.String("bin", "", "the node binary (arguments for it go after --)")
	nodeCount := fs.Int("node-count", 3, "number of nodes")
	timeLimit := fs.Float64("time-limit", 10, "seconds of client operations")
	rate := fs.Float64("rate", 20, "operations per second, across all clients")
	concurrency := fs.String("concurrency", "2n", "logical clients: a number, or Kn for K per node")
	latency := fs.Float64("latency", 10, "mean one-way message latency, ms")
	latencyDist := fs.String("latency-dist", runner.LatencyExponential, "latency distribution: exponential, uniform or constant")
	nemesis := fs.String("nemesis", "", "comma-separated faults: partition")
	nemesisInterval := fs.Float64("nemesis-interval", 5, "mean seconds of each healthy and each partitioned phase")
	recovery := fs.Float64("recovery", 3, "seconds without faults at the end of the run")
	opTimeout := fs.Float64("op-timeout", 5, "seconds a client waits for a reply before recording info")
	keys := fs.Int("keys", 0, "lin-kv keys or lock resources (0: 5 keys, 2 resources)")
	out := fs.String("out", defaultOut, "results root; the run's directory is <workload>-n<N>-seed<S>")
	logDir := fs.String("log-dir", filepath.Join("results", "tmp", "maelstrom"), "root for the nodes' stderr logs (<root>/<base of --out>/<run>)")
	checkTimeout := fs.Duration("check-timeout", time.Minute, "bound on the linearizability search")
	recheck := fs.String("check", "", "re-check the history.json in this run directory instead of running")
	verbose := fs.Bool("v", false, "log the runner's progress to stderr")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *recheck != "" {
		return recheckDir(*recheck, *checkTimeout, stdout, stderr)
	}
	clients, err := parseConcurrency(*concurrency, *nodeCount)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano() % 1_000_000
	}
	if *keys == 0 {
		*keys = 5
		if *workload == runner.WorkloadLock {
			*keys = 2
		}
	}
	var faults []string
	if *nemesis != "" {
		faults = strings.Split(*nemesis, ",")
	}
	name := fmt.Sprintf("%s-n%d-seed%d", *workload, *nodeCount, *seed)
	seconds := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	// The replay command: the seed first, then every choice the run made.
	cmdline := fmt.Sprintf("go run ./cmd/maelstrom-run --seed %d -w %s --bin %s --node-count %d --time-limit %g --rate %g --concurrency %d --latency %g --latency-dist %s --nemesis-interval %g --recovery %g --op-timeout %g --keys %d",
		*seed, *workload, *bin, *nodeCount, *timeLimit, *rate, clients, *latency, *latencyDist, *nemesisInterval, *recovery, *opTimeout, *keys)
	if *nemesis != "" {
		cmdline += " --nemesis " + *nemesis
	}
	if *out != defaultOut {
		cmdline += " --out " + *out
	}
	if len(fs.Args()) > 0 {
		cmdline += " -- " + strings.Join(fs.Args(), " ")
	}
	opts := runner.Options{
		Workload: *workload, Bin: *bin, BinArgs: fs.Args(), NodeCount: *nodeCount, TimeLimit: seconds(*timeLimit),
		Rate: *rate, Concurrency: clients, Latency: time.Duration(*latency * float64(time.Millisecond)), LatencyDist: *latencyDist,
		Nemesis: faults, NemesisInterval: seconds(*nemesisInterval), Recovery: seconds(*recovery), OpTimeout: seconds(*opTimeout),
		// Logs are kept apart per results root, so runs of the same name
		// under different --out do not overwrite each other's logs.
		Seed: *seed, Keys: *keys, Dir: filepath.Join(*out, name), LogDir: filepath.Join(*logDir, filepath.Base(*out), name),
		Command: cmdline, CheckTimeout: *checkTimeout,
	}
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	fmt.Fprintf(stdout, "SEED=%d workload=%s nodes=%d time-limit=%gs rate=%g concurrency=%d latency=%gms/%s nemesis=%q interval=%gs\n",
		*seed, *workload, *nodeCount, *timeLimit, *rate, clients, *latency, *latencyDist, *nemesis, *nemesisInterval)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	v, err := runner.Run(ctx, opts)
	return conclude(v, err, opts.Dir, cmdline, stdout, stderr)
}

// conclude prints the outcome and picks the exit status.
func conclude(v *runner.Verdict, err error, dir, cmdline string, stdout, stderr io.Writer) int {
	if v != nil {
		fmt.Fprintf(stdout, "ok=%d fail=%d info=%d faults=%d linearizability=%s result=%s\n", v.OK, v.Fail, v.Info, v.Faults, v.Linearizability, v.Result)
		for _, s := range v.Violations {
			fmt.Fprintln(stdout, "  "+s)
		}
		for _, s := range v.Notes {
			fmt.Fprintln(stdout, "  note: "+s)
		}
		fmt.Fprintln(stdout, "results:", dir)
	}
	switch {
	case err != nil && errors.Is(err, runner.ErrHarness):
		fmt.Fprintln(stderr, "harness error:", err)
		fmt.Fprintln(stdout, "replay:", cmdline)
		return exitHarness
	case err != nil:
		fmt.Fprintln(stderr, err)
		return exitHarness
	case v.Result == runner.Invalid:
		fmt.Fprintln(stdout, "FAILED; replay:", cmdline)
		return exitInvalid
	case v.Result != runner.Valid:
		fmt.Fprintln(stdout, "INCONCLUSIVE; replay:", cmdline)
		return exitUnknown
	}
	fmt.Fprintln(stdout, "PASSED")
	return exitValid
}

// recheckDir recomputes a saved run's verdict from its history alone.
func recheckDir(dir string, timeout time.Duration, stdout, stderr io.Writer) int {
	h, err := runner.LoadHistory(filepath.Join(dir, "history.json"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitHarness
	}
	cmd, _ := os.ReadFile(filepath.Join(dir, "COMMAND.txt"))
	v, err := runner.Report(context.Background(), h, dir, strings.TrimSpace(string(cmd)), timeout)
	return conclude(v, err, dir, strings.TrimSpace(string(cmd)), stdout, stderr)
}

// parseConcurrency reads Maelstrom's --concurrency: a number, or "Kn" for
// K clients per node.
func parseConcurrency(s string, nodes int) (int, error) {
	if k, ok := strings.CutSuffix(s, "n"); ok {
		f, err := strconv.Atoi(k)
		if err != nil || f < 1 {
			return 0, fmt.Errorf("bad --concurrency %q", s)
		}
		return f * nodes, nil
	}
	c, err := strconv.Atoi(s)
	if err != nil || c < 1 {
		return 0, fmt.Errorf("bad --concurrency %q", s)
	}
	return c, nil
}
