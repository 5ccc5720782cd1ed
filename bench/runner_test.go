package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// shortWorkload is a sub-second run sized for tests.
func shortWorkload(name string, private bool) Workload {
	return Workload{
		Name: name, Private: private, Keys: 1, Dist: "uniform", Clients: 8,
		Duration: 600 * time.Millisecond, Warmup: 100 * time.Millisecond, MaxOps: 1_000_000,
		TTL: 5 * time.Second, Wait: 2 * time.Second, Policy: api.FIFO, Seed: 1,
		InversionSlack: time.Millisecond,
	}
}

// TestRunAgainstBare runs the harness end to end against the bare server,
// uncontended and contended (≈1.5 s in all), and checks that real numbers
// come out: ops > 0, no errors, sane percentiles, handoffs measured only
// under contention, and a report with plots written.
func TestRunAgainstBare(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	target, err := NewBareTarget()
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()

	var results []*Result
	for _, tc := range []struct {
		name    string
		private bool
	}{{"uncontended", true}, {"contended", false}} {
		r, err := Run(ctx, target, shortWorkload(tc.name, tc.private))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
		if r.Ops <= 0 || r.OpsPerSec <= 0 {
			t.Errorf("%s: no ops (%d, %.0f/s)", tc.name, r.Ops, r.OpsPerSec)
		}
		if n := r.ErrorCount(); n != 0 {
			t.Errorf("%s: %d errors: %v", tc.name, n, r.Errors)
		}
		a := r.Acquire
		if a.Count < uint64(r.Ops) || a.P50Ms <= 0 || a.P50Ms > a.P99Ms || a.P99Ms > a.MaxMs {
			t.Errorf("%s: acquire summary inconsistent: %+v (ops %d)", tc.name, a, r.Ops)
		}
		// Starvation is only asked of private keys: on one shared key in a
		// 0.6 s run on a loaded machine a client may well get nothing.
		if (tc.private && r.Fairness.Starved != 0) || r.Fairness.Jain <= 0 || r.Fairness.Jain > 1 {
			t.Errorf("%s: fairness %+v", tc.name, r.Fairness)
		}
		if r.DurationS < 0.5 || r.DurationS > 5 {
			t.Errorf("%s: measured %.2fs, want about 0.6s", tc.name, r.DurationS)
		}
		// Own keys never wait for anyone; one shared key always does.
		if tc.private && (r.Handoff.Count != 0 || r.Fairness.Inversions != 0) {
			t.Errorf("uncontended: handoffs %d inversions %d, want 0", r.Handoff.Count, r.Fairness.Inversions)
		}
		if !tc.private && r.Handoff.Count == 0 {
			t.Errorf("contended: no handoffs measured")
		}
	}

	dir := t.TempDir()
	if err := WriteReport(dir, results); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.json", "results.md", "cdf-acquire-contended-c8.svg", "fairness.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("report file %s missing or empty: %v", f, err)
		}
	}
}

// TestRunOpenLoopAndMaxOps checks the open loop reaches roughly its rate and
// that MaxOps ends a run early.
func TestRunOpenLoopAndMaxOps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	target, err := NewBareTarget()
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()

	w := shortWorkload("uncontended", true)
	w.RatePerSec = 200
	r, err := Run(ctx, target, w)
	if err != nil {
		t.Fatal(err)
	}
	// An open loop never runs ahead of its rate; how close it gets depends
	// on the machine, which a unit test must not judge.
	if r.OpsPerSec <= 0 || r.OpsPerSec > 300 {
		t.Errorf("open loop at 200/s did %.0f ops/s", r.OpsPerSec)
	}

	w = shortWorkload("contended", false)
	w.Duration, w.MaxOps = 10*time.Second, 50
	start := time.Now()
	r, err = Run(ctx, target, w)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops < 50 || r.Ops > 50+int64(w.Clients) || time.Since(start) > 5*time.Second {
		t.Errorf("max ops 50: got %d ops in %v", r.Ops, time.Since(start))
	}
}

// TestWorkloadValidate checks that unbounded or nonsensical workloads are refused.
func TestWorkloadValidate(t *testing.T) {
	good := shortWorkload("x", false)
	if err := good.validate(); err != nil {
		t.Fatalf("good workload refused: %v", err)
	}
	for name, mutate := range map[string]func(*Workload){
		"no-duration": func(w *Workload) { w.Duration = 0 },
		"no-max-ops":  func(w *Workload) { w.MaxOps = 0 },
		"no-clients":  func(w *Workload) { w.Clients = 0 },
		"too-many":    func(w *Workload) { w.Clients = maxClients + 1 },
		"bad-policy":  func(w *Workload) { w.Policy = "random" },
		"bad-shared":  func(w *Workload) { w.SharedFrac = 1.5 },
		"tiny-ttl":    func(w *Workload) { w.TTL = time.Microsecond },
	} {
		w := good
		mutate(&w)
		if err := w.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
