// Command lockbench load-tests lockstep and the services it is compared
// with (bare HTTP baseline, etcd, Redis) under one workload and writes
// JSON, a Markdown table and plots. See package bench for the details.
//
//	go run ./cmd/lockd dev & go run ./cmd/lockbench     # lockstep is the default target
//	go run ./cmd/lockbench -target bare,redis,redis-aof -clients 16 -keys 1 -duration 10s
//	go run -tags peers ./cmd/lockbench -target etcd,etcd1 -clients 1,4,16,64
//	go build -o /tmp/lockd ./cmd/lockd && go run ./cmd/lockbench -target lockstep -spawn /tmp/lockd -mode fifo,throughput
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/lockstep/lockstep/bench"
	"github.com/lockstep/lockstep/core/api"
)

func main() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return // the flag package has printed the usage
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		os.Exit(2)
	}
	if cfg.from != "" {
		if err := rewriteReport(cfg.from, cfg.out); err != nil {
			slog.Error("lockbench failed", "err", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runAll(ctx, cfg); err != nil {
		slog.Error("lockbench failed", "err", err)
		stop()
		os.Exit(1)
	}
}

// runAll runs every target × workload × policy × client count, then writes
// the report (also after a failure, with whatever finished).
func runAll(ctx context.Context, cfg config) error {
	workDir, err := os.MkdirTemp("", "lockbench-*")
	if err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	var results []*bench.Result
	runErr := func() error {
		for _, name := range cfg.targets {
			rs, err := runTarget(ctx, cfg, name, workDir)
			results = append(results, rs...)
			if err != nil {
				return fmt.Errorf("%s: %w (logs kept in %s)", name, err, workDir)
			}
		}
		return nil
	}()
	if runErr == nil {
		if err := os.RemoveAll(workDir); err != nil {
			slog.Warn("remove work dir", "dir", workDir, "err", err)
		}
	}
	if len(results) == 0 {
		return runErr
	}
	if err := bench.WriteReport(cfg.out, results); err != nil {
		return fmt.Errorf("report: %w (run error: %v)", err, runErr)
	}
	slog.Info("report written", "dir", cfg.out, "runs", len(results))
	return runErr
}

// rewriteReport renders the table and plots again from saved results, e.g.
// after a change to the report format.
func rewriteReport(from, out string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	var results []*bench.Result
	if err := json.Unmarshal(b, &results); err != nil {
		return fmt.Errorf("decode %s: %w", from, err)
	}
	if err := bench.WriteReport(out, results); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	slog.Info("report written", "dir", out, "runs", len(results))
	return nil
}

func runTarget(ctx context.Context, cfg config, name, workDir string) ([]*bench.Result, error) {
	slog.Info("starting target", "target", name)
	t, err := bench.OpenTarget(ctx, name, bench.TargetOptions{
		Lockstep:    bench.LockstepOptions{URLs: cfg.addrs, Spawn: cfg.spawn, Spread: cfg.spread},
		RedisBinary: cfg.redisBin,
		WorkDir:     workDir,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := t.Close(); err != nil {
			slog.Warn("close target", "target", name, "err", err)
		}
	}()
	policies := cfg.policies
	policyLabel := func(p api.Policy) string { return string(p) }
	if !t.Traits().Policies {
		// The policy field means nothing to this target: one run suffices.
		policies = policies[:1]
		policyLabel = func(api.Policy) string { return "native" }
	}
	var results []*bench.Result
	for _, workload := range cfg.workloads {
		for _, policy := range policies {
			for _, clients := range cfg.clients {
				w := workloadFor(cfg, workload, policy, clients)
				w.Label = fmt.Sprintf("[%s %s %s c=%d]", name, workload, policyLabel(policy), clients)
				if !cfg.quiet {
					w.Progress = os.Stderr
				}
				r, err := runMeasured(ctx, cfg, name, t, w)
				if err != nil {
					return results, err
				}
				slog.Info("run done", "label", w.Label, "ops_per_sec", int(r.OpsPerSec),
					"acq_p99_ms", r.Acquire.P99Ms, "jain", r.Fairness.Jain, "errors", r.ErrorCount())
				results = append(results, r)
			}
		}
	}
	return results, nil
}

func workloadFor(cfg config, workload string, policy api.Policy, clients int) bench.Workload {
	return bench.Workload{
		Name:           workload,
		Private:        workload == "uncontended",
		Keys:           cfg.keys,
		Dist:           cfg.dist,
		ZipfS:          cfg.zipfS,
		Clients:        clients,
		RatePerSec:     cfg.ratePerSec,
		Duration:       cfg.duration,
		Warmup:         cfg.warmup,
		MaxOps:         cfg.maxOps,
		Hold:           cfg.hold,
		TTL:            cfg.ttl,
		Wait:           cfg.wait,
		SharedFrac:     cfg.sharedFrac,
		Policy:         policy,
		InversionSlack: cfg.invSlack,
		Seed:           cfg.seed,
	}
}

// runMeasured runs one workload; with -breakdown on lockstep it also
// scrapes the members' stage histograms around the run.
func runMeasured(ctx context.Context, cfg config, name string, t bench.Target, w bench.Workload) (*bench.Result, error) {
	if !cfg.breakdown || name != "lockstep" {
		return bench.Run(ctx, t, w)
	}
	before, err := bench.ScrapeStages(ctx, cfg.metricsAddrs)
	if err != nil {
		return nil, fmt.Errorf("breakdown: %w", err)
	}
	r, err := bench.Run(ctx, t, w)
	if err != nil {
		return r, err
	}
	after, err := bench.ScrapeStages(ctx, cfg.metricsAddrs)
	if err != nil {
		return r, fmt.Errorf("breakdown: %w", err)
	}
	r.Breakdown = after.Since(before)
	return r, nil
}
