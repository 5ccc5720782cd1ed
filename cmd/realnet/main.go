// Command realnet runs lockstep's scenarios on real lockd processes over
// real TCP, with the simulator's seeds, schedules, workload, checker,
// report layout and exit codes (see cmd/locksim), and measures failover.
//
//	realnet -list
//	realnet -scenario networkPartition -seed 1
//	realnet -all -seeds 1..2
//	realnet -scenario networkPartition -seeds 1..3 -bug follower-grant
//	realnet -scenario networkPartition -seed 1 -crash host
//	realnet -scenario networkPartition -seed 1 -net netns
//	realnet -all -seeds 1..3 -lockd-args '--raft-log --heartbeat-timeout 150ms'
//	realnet -failover 20 -out results/realnet/failover.md
//
// It is its own command rather than a locksim mode: locksim runs inside a
// testing/synctest bubble (virtual time), where real processes and sockets
// cannot live, and it must not link the process side (TestDependencyBoundaries).
// lockd is built once per invocation with -tags lockstep_faults (plus
// lockstep_bugs for -bug). Exit codes: 0 every run as expected, 127 the
// harness crashed, 128 only liveness failed, 129 a correctness check
// failed, 130 a check could not finish.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/scenarios"
	"github.com/lockstep/lockstep/scenarios/realnet"
)

type options struct {
	scenario       string
	all, list      bool
	seedLo, seedHi int64
	bug            node.Bug
	results        string
	persist        bool
	lockdArgs      string
	durationMs     int64
	failover       int
	out            string
	tuned          string
	crash          string
	netns          bool
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "realnet:", err)
		os.Exit(2)
	}
	os.Exit(run(context.Background(), o, os.Stdout))
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("realnet", flag.ContinueOnError)
	fs.StringVar(&o.scenario, "scenario", "", "scenario name (see -list)")
	fs.BoolVar(&o.all, "all", false, "run every scenario")
	fs.BoolVar(&o.list, "list", false, "list scenarios")
	seed := fs.Int64("seed", 1, "one seed")
	seeds := fs.String("seeds", "", "seed range a..b")
	bug := fs.String("bug", "", "server bug mode (lockd is built with lockstep_bugs)")
	fs.StringVar(&o.results, "results", realnet.DefaultResultsDir, "reports go to `dir`/<scenario>/<seed>[-<bug>]/")
	fs.BoolVar(&o.persist, "persist", false, "write the report of every run, not only failures")
	crash := fs.String("crash", "auto", "what a crash is: process (kill -9, the host refuses connections), host (kill -9 and the host drops off the network, as in the simulator), or auto (host for scenarios about callers left waiting on a dead member, else process)")
	network := fs.String("net", "proxy", "how partitions are made: proxy (a userspace TCP proxy per member link) or netns (a network namespace per member, packets dropped with nftables; needs root, ip and nft)")
	fs.StringVar(&o.lockdArgs, "lockd-args", "", "extra flags for every lockd, space separated")
	fs.Int64Var(&o.durationMs, "duration-ms", 0, "override the scenarios' duration (0: the scenario's)")
	fs.IntVar(&o.failover, "failover", 0, "measure failover over N leader kills (and N partition heals) instead")
	fs.StringVar(&o.out, "out", "", "with -failover: write the Markdown table here too")
	fs.StringVar(&o.tuned, "tuned-args", "", "with -failover: also measure with these lockd flags (after tuning)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.bug = node.Bug(*bug)
	switch *crash {
	case "process", "host", "auto":
		o.crash = *crash
	default:
		return o, fmt.Errorf("-crash %q: want process, host or auto", *crash)
	}
	switch *network {
	case "proxy":
	case "netns":
		o.netns = true
	default:
		return o, fmt.Errorf("-net %q: want proxy or netns", *network)
	}
	o.seedLo, o.seedHi = *seed, *seed
	if *seeds != "" {
		var err error
		if o.seedLo, o.seedHi, err = scenarios.ParseSeedRange(*seeds); err != nil {
			return o, err
		}
	}
	if !o.list && !o.all && o.scenario == "" && o.failover == 0 {
		return o, fmt.Errorf("give -scenario NAME, -all, -failover N or -list")
	}
	return o, nil
}

func run(ctx context.Context, o options, w io.Writer) int {
	all, err := scenarios.All()
	if err != nil {
		fmt.Fprintln(w, "realnet:", err)
		return scenarios.ExitCrash
	}
	if o.list {
		for _, s := range all {
			fmt.Fprintf(w, "%-18s %s\n", s.Name, s.Description)
		}
		return scenarios.ExitOK
	}
	work, err := os.MkdirTemp("", "realnet-bin-")
	if err != nil {
		fmt.Fprintln(w, "realnet:", err)
		return scenarios.ExitCrash
	}
	defer os.RemoveAll(work)
	bin, err := realnet.BuildLockd(ctx, work, realnet.BuildTags(o.bug != ""))
	if err != nil {
		fmt.Fprintln(w, "realnet:", err)
		return scenarios.ExitCrash
	}
	if o.failover > 0 {
		return failover(ctx, o, bin, w)
	}
	if o.netns {
		if err := realnet.NetnsSupport(); err != nil {
			fmt.Fprintf(w, "SKIPPED: -net netns: %v\n", err)
			return scenarios.ExitOK
		}
	}
	code, runs, bad := scenarios.ExitOK, 0, 0
	for _, s := range all {
		if !o.all && s.Name != o.scenario {
			continue
		}
		if o.netns && s.Gateway {
			fmt.Fprintf(w, "SKIPPED scenario=%s: -net netns does not run the gateway (its links are proxies)\n\n", s.Name)
			runs++
			continue
		}
		if o.durationMs > 0 {
			s.DurationMs = o.durationMs
		}
		for seed := o.seedLo; seed <= o.seedHi; seed++ {
			runs++
			if c := runOne(ctx, s, seed, o, bin, w); c != scenarios.ExitOK {
				bad++
				code = max(code, c)
			}
		}
	}
	if runs == 0 {
		fmt.Fprintf(w, "realnet: no scenario %q\n", o.scenario)
		return scenarios.ExitCrash
	}
	fmt.Fprintf(w, "%d runs, %d not as expected\n", runs, bad)
	return code
}

func runOne(ctx context.Context, s scenarios.Scenario, seed int64, o options, bin string, w io.Writer) int {
	wall := time.Now()
	hostCrash := o.crash == "host" || (o.crash == "auto" && realnet.NeedsHostCrash(s))
	out, err := realnet.Run(ctx, s, realnet.Options{
		Seed: seed, Bug: o.bug, Bin: bin, ResultsDir: o.results, Persist: o.persist,
		LockdArgs: strings.Fields(o.lockdArgs), HostCrash: hostCrash, Netns: o.netns,
	})
	replay := fmt.Sprintf("go run ./cmd/realnet -scenario %s -seed %d", s.Name, seed)
	if o.bug != "" {
		replay += " -bug " + string(o.bug)
	}
	if o.crash != "auto" {
		replay += " -crash " + o.crash
	}
	if o.netns {
		replay += " -net netns"
	}
	if o.lockdArgs != "" {
		replay += fmt.Sprintf(" -lockd-args '%s'", o.lockdArgs)
	}
	if err != nil || out == nil {
		fmt.Fprintf(w, "SEED=%d scenario=%s CRASH: %v\nreplay: %s\n\n", seed, s.Name, err, replay)
		return scenarios.ExitCrash
	}
	for _, p := range out.Params {
		fmt.Fprintf(w, "%s=%s\n", p.Name, p.Value)
	}
	st := out.Result.Stats
	fmt.Fprintf(w, "wall=%s ops=%d unknown=%d grants=%d trace_events=%d replicas_compared=%d queues_compared=%d expiries_judged=%d\n",
		time.Since(wall).Round(time.Millisecond), st.Ops, st.UnknownOps, st.Grants, st.TraceEvents,
		out.Compared, st.QueuesCompared, st.ExpiriesJudged)
	dir := func() {
		if out.Dir != "" {
			fmt.Fprintf(w, "report: %s\n", out.Dir)
		}
	}
	switch {
	case o.bug != "" && out.AsExpected:
		fmt.Fprintf(w, "CAUGHT %s: %s\n", o.bug, out.Result.Violations[0].Message)
	case o.bug != "":
		fmt.Fprintf(w, "NOT CAUGHT %s (verdict %s)\n", o.bug, out.Result.Verdict)
		dir()
		fmt.Fprintln(w)
		return scenarios.ExitCorrectness
	case out.AsExpected:
		fmt.Fprintf(w, "PASSED (verdict %s as expected)\n", out.Result.Verdict)
	default:
		fmt.Fprintf(w, "UNEXPECTED verdict %s (expected %s)\n", out.Result.Verdict, s.Expect.Verdict)
		for _, v := range out.Result.Violations {
			fmt.Fprintf(w, "  %s\n", v.Message)
		}
		for _, n := range out.Result.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		dir()
		fmt.Fprintf(w, "replay: %s\n\n", replay)
		return scenarios.ExitCode(out.Result)
	}
	dir()
	fmt.Fprintf(w, "replay: %s\n\n", replay)
	return scenarios.ExitOK
}
