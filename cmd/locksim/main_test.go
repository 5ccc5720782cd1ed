package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/scenarios"
)

// repoRoot returns the top of the git checkout holding this package, or
// skips the test where there is no git or no checkout (e.g. a source tarball).
func repoRoot(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Goal: a run with default flags cannot dirty the checkout: its report
// directory is git-ignored and holds no committed file. Method: parse the
// README's command line, build the run directory it would write (relative
// to the repository root, where README runs locksim), and ask git: a
// tracked file is never "ignored", so the committed results/sim/ example
// fails this check.
func TestDefaultRunDirIsIgnored(t *testing.T) {
	root := repoRoot(t)
	o, err := parseFlags([]string{"-scenario", "leaderCrash", "-seed", "1"})
	if err != nil {
		t.Fatalf("parseFlags: %v", err)
	}
	if filepath.IsAbs(o.results) {
		t.Fatalf("default results dir %q is absolute; want one relative to the repository root", o.results)
	}
	dir := filepath.Join(root, scenarios.RunDir(o.results, "leaderCrash", 1, ""))
	for _, f := range []string{"verdict.json", "params.json", "history.html"} {
		cmd := exec.Command("git", "-C", root, "check-ignore", "-q", filepath.Join(dir, f))
		if err := cmd.Run(); err != nil {
			t.Errorf("%s is not git-ignored (git check-ignore: %v)", filepath.Join(dir, f), err)
		}
	}
	tracked, err := exec.Command("git", "-C", root, "ls-files", "--", filepath.Join(root, o.results)).Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	if len(tracked) > 0 {
		t.Errorf("default results dir %q holds committed files:\n%s", o.results, tracked)
	}
}

// Goal: every run that saved a report prints its directory, whatever the
// verdict line. Method: printOutcome on outcomes of each kind (bug caught,
// bug missed, expected pass, unexpected failure) with Dir set, and one
// without a saved report, which must print no report line.
func TestPrintOutcomeNamesReportDir(t *testing.T) {
	s := scenarios.Scenario{Name: "leaderCrash"}
	s.Expect.Verdict = checker.Success
	failure := checker.Result{Verdict: checker.Failure, Violations: []checker.Violation{{Check: "linearizability", Message: "not linearizable"}}}
	tests := []struct {
		name string
		bug  node.Bug
		out  scenarios.Outcome
	}{
		{"bug caught", "local-renew", scenarios.Outcome{AsExpected: true, Result: failure, Dir: "runs/leaderCrash/1-local-renew"}},
		{"bug not caught", "local-renew", scenarios.Outcome{Result: checker.Result{Verdict: checker.Success}, Dir: "runs/leaderCrash/1-local-renew"}},
		{"passed, persisted", "", scenarios.Outcome{AsExpected: true, Result: checker.Result{Verdict: checker.Success}, Dir: "runs/leaderCrash/1"}},
		{"unexpected", "", scenarios.Outcome{Result: failure, Dir: "runs/leaderCrash/1"}},
		{"nothing saved", "", scenarios.Outcome{AsExpected: true, Result: checker.Result{Verdict: checker.Success}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			printOutcome(&buf, s, 1, options{bug: tt.bug}, &tt.out, nil, 1)
			want := "report: " + tt.out.Dir + "\n"
			got := strings.Contains(buf.String(), "report: ")
			switch {
			case tt.out.Dir == "" && got:
				t.Errorf("report line without a saved report:\n%s", buf.String())
			case tt.out.Dir != "" && !strings.Contains(buf.String(), want):
				t.Errorf("output lacks %q:\n%s", strings.TrimSpace(want), buf.String())
			}
		})
	}
}

// Goal: end to end, README's bug-mode example saves its report where the
// printed line says. Method: one real locksim run (leaderCrash, seed 1,
// local-renew) into a temporary results directory. The seed does not fix
// goroutine interleaving, so the bug is usually but not always caught;
// either outcome saves a report.
func TestSavedRunPrintsItsDirectory(t *testing.T) {
	results := t.TempDir()
	args := []string{"-scenario", "leaderCrash", "-seed", "1", "-results", results, "-persist"}
	if len(node.Bugs) > 0 {
		args = append(args, "-bug", "local-renew")
	}
	o, err := parseFlags(args)
	if err != nil {
		t.Fatalf("parseFlags: %v", err)
	}
	var buf bytes.Buffer
	if code := sweep(t, o, &buf); code != scenarios.ExitOK && code != scenarios.ExitCorrectness {
		t.Fatalf("exit code %d:\n%s", code, buf.String())
	}
	dir := scenarios.RunDir(results, "leaderCrash", 1, o.bug)
	if !strings.Contains(buf.String(), "report: "+dir+"\n") {
		t.Fatalf("output does not name %s:\n%s", dir, buf.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "verdict.json")); err != nil {
		t.Errorf("printed report dir has no verdict: %v", err)
	}
}

// TestWatchStall: goal — a run whose virtual time stands still is reported
// once, and a run that moves, or has reached its checks (-1), is not.
// Method: drive the progress value by hand against a short limit.
func TestWatchStall(t *testing.T) {
	// Generous against a loaded machine: a moving run changes its value
	// every step, twenty times within the limit.
	const limit, step = time.Second, 50 * time.Millisecond
	for _, tc := range []struct {
		name  string
		move  func(p *atomic.Int64, i int)
		stall bool
	}{
		{"stands still", func(p *atomic.Int64, i int) {}, true},
		{"moves", func(p *atomic.Int64, i int) { p.Store(int64(i)) }, false},
		{"checking", func(p *atomic.Int64, i int) { p.Store(-1) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p atomic.Int64
			p.Store(7)
			calls := make(chan time.Duration, 2)
			stop := watchStall(&p, limit, func(virtual, _ time.Duration) { calls <- virtual })
			for i := 1; i <= 2*int(limit/step); i++ {
				tc.move(&p, 10+i)
				time.Sleep(step)
			}
			stop()
			switch {
			case tc.stall && len(calls) != 1:
				t.Fatalf("stalled run reported %d times, want once", len(calls))
			case tc.stall:
				if v := <-calls; v != 7 {
					t.Errorf("reported virtual time %v, want 7ns", v)
				}
			case len(calls) != 0:
				t.Errorf("run that %s was reported stalled", tc.name)
			}
		})
	}
}
