//go:build !wasip1

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lockstep/lockstep/scenarios"
	"github.com/lockstep/lockstep/sim/wasmhost"
)

// guestResults is where the guest sees the results directory. It is the
// same for every run, so a run's bytes do not depend on where the host
// keeps its reports (locksim -check replays into a temporary directory).
const guestResults = "/results"

// guestGOGC is the guest's GOGC. Part of what a run is: the collector runs
// on the guest's only thread, so another value may change the run. 400 trades guest memory (~2-4x
// the live heap) for less collector time; see EXPERIMENTS.md.
const guestGOGC = "400"

// guestKeySalt is appended to every guest's entropy key. Empty in real
// runs; a test sets it to prove that a replay comparison notices when
// nothing but the guest's entropy changed.
var guestKeySalt = ""

// guestGOMEMLIMIT caps the guest heap the collector aims for.
const guestGOMEMLIMIT = "off"

// runDeterministic runs every selected (scenario, seed) in its own wasm
// guest, up to o.jobs at a time, and prints the guests' output in sweep
// order, so the bytes on w do not depend on -jobs or on timing.
func runDeterministic(ctx context.Context, o options, w, diag io.Writer) int {
	runs, err := selectRuns(o)
	if err != nil {
		fmt.Fprintln(diag, "locksim:", err)
		return scenarios.ExitCrash
	}
	if o.results != "" {
		// The guest can only write below a mounted directory.
		if err := os.MkdirAll(o.results, 0o755); err != nil {
			fmt.Fprintln(diag, "locksim:", err)
			return scenarios.ExitCrash
		}
	}
	start := time.Now()
	host, err := newGuestHost(ctx, o, diag)
	if err != nil {
		fmt.Fprintln(diag, "locksim:", err)
		return scenarios.ExitCrash
	}
	// stopped tells workers to skip the rest of a scenario once
	// -stop-on-violation has printed its first violation.
	var stopped sync.Map
	results := startGuests(ctx, host, o, runs, &stopped)
	code, printed, bad := scenarios.ExitOK, 0, 0
	for i, r := range runs {
		g := <-results[i]
		if _, skip := stopped.Load(r.scenario); skip || g.skipped {
			continue
		}
		printed++
		_, _ = w.Write(g.stdout)
		_, _ = diag.Write(g.stderr)
		fmt.Fprintf(diag, "deterministic: %s seed %d: wall %s (instantiate %s, run %s)\n", r.scenario, r.seed,
			g.wall.Round(time.Millisecond), g.timing.Instantiate.Round(time.Millisecond), g.timing.Run.Round(time.Millisecond))
		if g.code != scenarios.ExitOK {
			bad++
			code = max(code, g.code)
		}
		if o.stopOn && o.bug != "" && g.code == scenarios.ExitOK {
			fmt.Fprintf(w, "VIOLATION FOUND scenario=%s bug=%s seeds_tried=%d\n", r.scenario, o.bug, r.seed-o.seedLo+1)
			stopped.Store(r.scenario, true)
		}
	}
	fmt.Fprintf(w, "%d runs, %d not as expected\n", printed, bad)
	fmt.Fprintf(diag, "deterministic: %d runs in %s (module load and compile %s, jobs %d)\n",
		printed, time.Since(start).Round(time.Millisecond), host.Compile.Round(time.Millisecond), o.jobs)
	return code
}

// startGuests runs the guests on o.jobs workers; the i-th channel receives
// the i-th run's result.
func startGuests(ctx context.Context, host *wasmhost.Host, o options, runs []runKey, stopped *sync.Map) []chan guestRun {
	results := make([]chan guestRun, len(runs))
	next := make(chan int, len(runs))
	for i := range runs {
		results[i] = make(chan guestRun, 1)
		next <- i
	}
	close(next)
	for range min(o.jobs, len(runs)) {
		go func() {
			for i := range next {
				switch _, skip := stopped.Load(runs[i].scenario); {
				case skip:
					results[i] <- guestRun{skipped: true}
				case o.replays > 1:
					results[i] <- runReplayed(ctx, host, o, runs[i])
				default:
					results[i] <- runGuest(ctx, host, o, runs[i])
				}
			}
		}()
	}
	return results
}

type runKey struct {
	scenario string
	seed     int64
}

// selectRuns lists the (scenario, seed) pairs of a sweep in its order.
func selectRuns(o options) ([]runKey, error) {
	all, err := scenarios.All()
	if err != nil {
		return nil, err
	}
	var runs []runKey
	for _, s := range all {
		if !o.all && s.Name != o.scenario {
			continue
		}
		for seed := o.seedLo; seed <= o.seedHi; seed++ {
			runs = append(runs, runKey{s.Name, seed})
		}
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no scenario %q", o.scenario)
	}
	return runs, nil
}

// guestRun is what one guest printed and how it ended.
type guestRun struct {
	stdout, stderr []byte
	// guestStdout is stdout as the guest wrote it, naming reports under
	// guestResults: the same bytes wherever the host keeps them.
	guestStdout []byte
	code        int
	wall        time.Duration
	timing      wasmhost.Timing
	skipped     bool
}

// runGuest runs one (scenario, seed) in a fresh guest. Its entropy is keyed
// by the run's identity alone (scenario, seed, bug), never by the sweep
// around it, so the replay command of a failing run reproduces it exactly.
func runGuest(ctx context.Context, host *wasmhost.Host, o options, r runKey) guestRun {
	args := []string{"locksim", "-guest", "-deterministic", "-scenario", r.scenario, "-seed", fmt.Sprint(r.seed)}
	if o.bug != "" {
		args = append(args, "-bug", string(o.bug))
	}
	var mounts [][2]string
	results := ""
	if o.results != "" {
		results = guestResults
		mounts = [][2]string{{guestResults, o.results}}
	}
	args = append(args, "-results", results, fmt.Sprintf("-persist=%t", o.persist))
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code, timing, err := host.Run(ctx, wasmhost.Run{
		Key:    fmt.Sprintf("%s/%d/%s%s", r.scenario, r.seed, o.bug, guestKeySalt),
		Args:   args,
		Env:    guestEnv(),
		Stdout: &stdout, Stderr: &stderr,
		Mounts: mounts,
	})
	g := guestRun{stderr: stderr.Bytes(), code: int(code), wall: time.Since(start), timing: timing}
	if err != nil {
		fmt.Fprintf(&stdout, "SEED=%d scenario=%s CRASH: %v\nreplay: %s -deterministic\n",
			r.seed, r.scenario, err, scenarios.ReplayCommand(r.scenario, r.seed, o.bug))
		g.code = scenarios.ExitCrash
	}
	g.guestStdout = stdout.Bytes()
	g.stdout = hostPaths(g.guestStdout, o.results)
	return g
}

// hostPaths names reports by the host's results directory, as a native run
// would.
func hostPaths(out []byte, results string) []byte {
	if results == "" {
		return out
	}
	return bytes.ReplaceAll(out, []byte("report: "+guestResults+"/"), []byte("report: "+filepath.Clean(results)+"/"))
}

// guestEnv is the guest's environment. LOCKSIM_GUEST_GOGC and
// LOCKSIM_GUEST_GOMEMLIMIT override the collector settings for measurement;
// a run replays only with the settings it ran with.
func guestEnv() [][2]string {
	env := [][2]string{{"GOGC", guestGOGC}, {"GOMEMLIMIT", guestGOMEMLIMIT}}
	for i, name := range []string{"LOCKSIM_GUEST_GOGC", "LOCKSIM_GUEST_GOMEMLIMIT"} {
		if v := os.Getenv(name); v != "" {
			env[i][1] = v
		}
	}
	return env
}
