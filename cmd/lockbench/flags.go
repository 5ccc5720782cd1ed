package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep/lockstep/bench"
	"github.com/lockstep/lockstep/core/api"
)

// config is the parsed command line.
type config struct {
	targets    []string
	addrs      []string
	spawn      string
	redisBin   string
	clients    []int
	ratePerSec float64
	duration   time.Duration
	warmup     time.Duration
	maxOps     int64
	keys       int
	workloads  []string
	dist       string
	zipfS      float64
	hold       time.Duration
	ttl        time.Duration
	wait       time.Duration
	sharedFrac float64
	policies   []api.Policy
	invSlack   time.Duration
	seed       uint64
	out        string
	from       string
	quiet      bool
	// breakdown scrapes metricsAddrs before and after each lockstep run.
	breakdown    bool
	metricsAddrs []string
	// spread: -route spread.
	spread bool
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("lockbench", flag.ContinueOnError)
	var c config
	var targets, addrs, clients, workloads, modes, metricsAddrs, route string
	fs.StringVar(&targets, "target", "lockstep", "comma list of targets: "+strings.Join(bench.TargetNames, ",")+
		" (lockstep needs a cluster at -addrs, e.g. lockd dev, or -spawn)")
	fs.StringVar(&addrs, "addrs", strings.Join(bench.DefaultLockdURLs, ","), "comma list of lockstep node URLs")
	fs.StringVar(&c.spawn, "spawn", "", "path of a lockd binary to start as `lockd dev` for the lockstep target")
	fs.StringVar(&c.redisBin, "redis-bin", "redis-server", "redis-server executable")
	fs.StringVar(&clients, "clients", "16", "comma list of closed-loop client counts (a sweep); with -rate, the in-flight cap")
	fs.Float64Var(&c.ratePerSec, "rate", 0, "open loop: arrivals per second (0 = closed loop)")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time per run")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "unmeasured time before each run")
	fs.Int64Var(&c.maxOps, "max-ops", 10_000_000, "stop a run after this many measured ops")
	fs.IntVar(&c.keys, "keys", 1, "key space: per client (uncontended) or shared (contended)")
	fs.StringVar(&workloads, "workload", "uncontended,contended", "comma list: uncontended (own keys per client), contended (shared keys)")
	fs.StringVar(&c.dist, "dist", "uniform", "key distribution: uniform or zipf")
	fs.Float64Var(&c.zipfS, "zipf-s", 1.1, "zipf exponent (>= 0)")
	fs.DurationVar(&c.hold, "hold", 0, "how long each lock is held")
	fs.DurationVar(&c.ttl, "ttl", 10*time.Second, "lease TTL")
	fs.DurationVar(&c.wait, "wait", 5*time.Second, "how long one acquire may wait (timed-out acquires are retried)")
	fs.Float64Var(&c.sharedFrac, "shared-frac", 0, "fraction of acquires in shared mode")
	fs.StringVar(&modes, "mode", "fifo", "comma list of lockstep policies: fifo, throughput")
	fs.DurationVar(&c.invSlack, "inversion-slack", 5*time.Millisecond, "requests sent closer than this never count as a FIFO inversion (keep above client-side jitter: the uncontended acquire p99)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed for key and mode choices")
	fs.StringVar(&c.out, "out", "", "output dir (default results/bench/<UTC time>)")
	fs.StringVar(&c.from, "from", "", "rewrite table and plots from an earlier results.json into -out, running nothing")
	fs.BoolVar(&c.quiet, "quiet", false, "no per-second progress lines")
	fs.StringVar(&route, "route", "leader", "lockstep: leader (each request to its shard's leader as /cluster names it) or spread (requests to the -addrs in turn, as behind a load balancer; one gateway URL sends all through it)")
	fs.BoolVar(&c.breakdown, "breakdown", false, "lockstep: report per-stage latency from the members' /metrics (scraped before and after each run)")
	fs.StringVar(&metricsAddrs, "metrics-addrs", "", "comma list of member URLs to scrape for -breakdown (default -addrs; set it when -addrs is a gateway)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}

	var errs []error
	c.targets = splitList(targets)
	for _, t := range c.targets {
		if !slices.Contains(bench.TargetNames, t) {
			errs = append(errs, fmt.Errorf("unknown target %q", t))
		}
	}
	c.addrs = splitList(addrs)
	switch route {
	case "leader":
	case "spread":
		c.spread = true
	default:
		errs = append(errs, fmt.Errorf("unknown route %q (want leader or spread)", route))
	}
	c.metricsAddrs = splitList(metricsAddrs)
	if len(c.metricsAddrs) == 0 {
		c.metricsAddrs = c.addrs
	}
	for _, s := range splitList(clients) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("bad client count %q", s))
			continue
		}
		c.clients = append(c.clients, n)
	}
	c.workloads = splitList(workloads)
	for _, w := range c.workloads {
		if w != "uncontended" && w != "contended" {
			errs = append(errs, fmt.Errorf("unknown workload %q", w))
		}
	}
	for _, m := range splitList(modes) {
		p := api.Policy(m)
		if p != api.FIFO && p != api.Throughput {
			errs = append(errs, fmt.Errorf("unknown mode %q", m))
			continue
		}
		c.policies = append(c.policies, p)
	}
	if len(c.targets) == 0 || len(c.clients) == 0 || len(c.workloads) == 0 || len(c.policies) == 0 {
		errs = append(errs, errors.New("-target, -clients, -workload and -mode must not be empty"))
	}
	if c.out == "" {
		c.out = "results/bench/" + time.Now().UTC().Format("20060102-150405")
	}
	return c, errors.Join(errs...)
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
