//go:build !wasip1

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockstep/lockstep/scenarios"
	"github.com/lockstep/lockstep/sim/wasmhost"
)

// runReplayed runs one (scenario, seed) o.replays times, each in a fresh
// guest saving its full report, and appends one line saying whether every
// replay printed the same bytes and saved the same files as the first.
// The first run's report is kept in o.results when it did not pass, with
// -persist, or when a replay differed (then every replay's is kept and
// named); otherwise nothing is left behind.
func runReplayed(ctx context.Context, host *wasmhost.Host, o options, r runKey) guestRun {
	base := o.results
	if base != "" {
		if err := os.MkdirAll(base, 0o755); err != nil {
			return guestRun{stdout: fmt.Appendf(nil, "SEED=%d scenario=%s CRASH: %v\n", r.seed, r.scenario, err), code: scenarios.ExitCrash}
		}
	}
	// Inside the results directory, so keeping a report is a rename.
	scratch, err := os.MkdirTemp(base, ".replay-")
	if err != nil {
		return guestRun{stdout: fmt.Appendf(nil, "SEED=%d scenario=%s CRASH: %v\n", r.seed, r.scenario, err), code: scenarios.ExitCrash}
	}
	replayDir := func(k int) string { return filepath.Join(scratch, fmt.Sprint(k)) }
	var first guestRun
	var diffs []string
	same := 0
	for k := range o.replays {
		ok := o
		ok.results, ok.persist = replayDir(k), true
		if err := os.MkdirAll(ok.results, 0o755); err != nil {
			return guestRun{stdout: fmt.Appendf(nil, "SEED=%d scenario=%s CRASH: %v\n", r.seed, r.scenario, err), code: scenarios.ExitCrash}
		}
		g := runGuest(ctx, host, ok, r)
		if k == 0 {
			first = g
			continue
		}
		first.stderr = append(first.stderr, g.stderr...)
		first.wall += g.wall
		if !bytes.Equal(g.guestStdout, first.guestStdout) {
			diffs = append(diffs, fmt.Sprintf("stdout of replay %d", k+1))
		}
		n, d, err := sameFiles(scenarios.RunDir(replayDir(0), r.scenario, r.seed, o.bug), scenarios.RunDir(replayDir(k), r.scenario, r.seed, o.bug))
		if err != nil {
			d = append(d, err.Error())
		}
		for _, f := range d {
			diffs = append(diffs, fmt.Sprintf("%s of replay %d", f, k+1))
		}
		same = n
	}
	first.stdout = keepReplayed(first, o, r, scratch, replayDir(0), len(diffs) > 0)
	if len(diffs) > 0 {
		first.stdout = fmt.Appendf(first.stdout, "REPLAYED %dx: DIFFERS: %s (replays kept in %s)\n\n", o.replays, strings.Join(diffs, ", "), scratch)
		first.code = max(first.code, exitReplayDiffers)
		return first
	}
	first.stdout = fmt.Appendf(first.stdout, "REPLAYED %dx: identical (stdout and %d files)\n\n", o.replays, same)
	_ = os.RemoveAll(scratch)
	return first
}

// keepReplayed moves the first replay's report where a plain run would
// have saved it, if a plain run would have kept it, and returns the first
// replay's output naming it (or naming none).
func keepReplayed(first guestRun, o options, r runKey, scratch, dir0 string, differs bool) []byte {
	out := bytes.TrimSuffix(first.guestStdout, []byte("\n"))
	keep := o.results != "" && (first.code != scenarios.ExitOK || o.persist || differs)
	if keep {
		target := scenarios.RunDir(o.results, r.scenario, r.seed, o.bug)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
			_ = os.RemoveAll(target)
			if err := os.Rename(scenarios.RunDir(dir0, r.scenario, r.seed, o.bug), target); err == nil {
				return append(hostPaths(out, o.results), '\n')
			}
		}
		return append(hostPaths(out, scratch), '\n')
	}
	var kept [][]byte
	for _, line := range bytes.SplitAfter(out, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("report: ")) {
			kept = append(kept, line)
		}
	}
	return append(bytes.Join(kept, nil), '\n')
}

// recheckReplay re-judges a saved run and, if it ran deterministically,
// replays it into a scratch directory and compares every saved file byte
// for byte. A replay that differs exits exitReplayDiffers.
func recheckReplay(ctx context.Context, o options, w, diag io.Writer) int {
	code := recheck(w, o.check)
	saved, err := loadOutcome(o.check)
	if err != nil {
		fmt.Fprintln(w, "locksim:", err)
		return scenarios.ExitCrash
	}
	if !saved.Deterministic {
		fmt.Fprintln(w, "history: saved by a native run; only its verdict can be re-checked (replay with -deterministic to regenerate it)")
		return code
	}
	scratch, err := os.MkdirTemp("", "locksim-check-")
	if err != nil {
		fmt.Fprintln(w, "locksim:", err)
		return scenarios.ExitCrash
	}
	defer os.RemoveAll(scratch)
	host, err := newGuestHost(ctx, o, diag)
	if err != nil {
		fmt.Fprintln(w, "locksim:", err)
		return scenarios.ExitCrash
	}
	replay := o
	replay.results, replay.persist, replay.bug = scratch, true, saved.Bug
	g := runGuest(ctx, host, replay, runKey{saved.Scenario, saved.Seed})
	if g.code == scenarios.ExitCrash {
		_, _ = w.Write(g.stdout)
		return scenarios.ExitCrash
	}
	same, diffs, err := sameFiles(o.check, scenarios.RunDir(scratch, saved.Scenario, saved.Seed, saved.Bug))
	if err != nil {
		fmt.Fprintln(w, "locksim:", err)
		return scenarios.ExitCrash
	}
	if len(diffs) > 0 {
		fmt.Fprintf(w, "history: DIFFERS from a fresh deterministic replay: %s\n", strings.Join(diffs, ", "))
		return exitReplayDiffers
	}
	fmt.Fprintf(w, "history: identical to a fresh deterministic replay (%d files)\n", same)
	return code
}
