package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/lockstep/lockstep/scenarios"
)

// A run whose virtual time stops moving has a goroutine that never blocks
// (a state machine looping forever under its lock, say): synctest cannot
// advance the clock, and the run would hang the sweep for good. The
// watchdog, outside the bubble and on real time, turns that into a
// verdict: it saves every goroutine's stack and ends locksim with the
// liveness exit code (the cluster made no progress).

// watchStall watches progress (scenarios.RunOptions.Progress) and, if it
// stays at one non-negative value for limit of wall time, calls stalled
// with the virtual time reached and the wall time it stood still, once.
// stop ends the watch.
func watchStall(progress *atomic.Int64, limit time.Duration, stalled func(virtual, wall time.Duration)) (stop func()) {
	if limit <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		poll := min(time.Second, limit/4)
		last, since := progress.Load(), time.Now()
		for {
			select {
			case <-done:
				return
			case <-time.After(poll):
			}
			v := progress.Load()
			if v != last || v < 0 {
				last, since = v, time.Now()
				continue
			}
			if time.Since(since) >= limit {
				stalled(time.Duration(v), time.Since(since))
				return
			}
		}
	}()
	return func() { close(done) }
}

// reportStall prints the stalled run's verdict and saves the goroutine
// dump; it returns the exit code.
func reportStall(w io.Writer, s scenarios.Scenario, seed int64, o options, virtual, wall time.Duration) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	fmt.Fprintf(w, "SEED=%d scenario=%s\nUNEXPECTED verdict stalled (expected %s)\n  liveness: nothing happened after virtual time %s for %s of wall time (a goroutine in the simulation never blocks; stacks saved)\n",
		seed, s.Name, s.Expect.Verdict, virtual.Round(time.Millisecond), wall.Round(time.Second))
	if o.results != "" {
		dir := scenarios.RunDir(o.results, s.Name, seed, o.bug)
		path := filepath.Join(dir, "stall-goroutines.txt")
		if err := os.MkdirAll(dir, 0o755); err == nil && os.WriteFile(path, buf, 0o644) == nil {
			fmt.Fprintf(w, "report: %s\n", dir)
		}
	}
	fmt.Fprintf(w, "replay: %s\n\n", scenarios.ReplayCommand(s.Name, seed, o.bug))
	return scenarios.ExitLiveness
}
