package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestMutantsParse reads the committed mutants: every one has a header, a
// unique name matching its file, and changes non-test Go files. (Whether
// they still apply to the tree is `go run ./cmd/mutate -check`: core/lock
// moves on and that is no reason to fail this package's tests.)
func TestMutantsParse(t *testing.T) {
	ms, err := loadMutants("../..", "cmd/mutate/mutants", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 16 {
		t.Fatalf("%d mutants, the issue asks for at least 16", len(ms))
	}
	concerns := map[string]bool{}
	for _, m := range ms {
		concerns[m.Concern] = true
	}
	if len(concerns) < 10 {
		t.Errorf("mutants cover %d concerns: %v", len(concerns), concerns)
	}
}

func TestParseMutantRejects(t *testing.T) {
	diff := "diff --git a/core/lock/x.go b/core/lock/x.go\n--- a/core/lock/x.go\n+++ b/core/lock/x.go\n@@ -1 +1 @@\n-a\n+b\n"
	for name, tc := range map[string]struct{ path, text string }{
		"no header":      {"m.patch", diff},
		"name mismatch":  {"other.patch", "Mutant: m\nConcern: c\nDescription: d\n\n" + diff},
		"no diff":        {"m.patch", "Mutant: m\nConcern: c\nDescription: d\n"},
		"test file":      {"m.patch", "Mutant: m\nConcern: c\nDescription: d\n\n" + strings.ReplaceAll(diff, "x.go", "x_test.go")},
		"outside module": {"m.patch", "Mutant: m\nConcern: c\nDescription: d\n\n" + strings.ReplaceAll(diff, "core/lock", "../x")},
	} {
		if _, err := parseMutant(tc.path, []byte(tc.text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	m, err := parseMutant("m.patch", []byte("Mutant: m\nConcern: c: d\nDescription: a: b\n\n"+diff))
	if err != nil {
		t.Fatal(err)
	}
	if m.Concern != "c: d" || m.Description != "a: b" || !reflect.DeepEqual(m.Files, []string{"core/lock/x.go"}) {
		t.Errorf("parsed %+v", m)
	}
}

// simOutput is locksim's output shape (cmd/locksim printOutcome).
const simOutput = `SEED=1
scenario=clientCrash
bug=
virtual=20.01s wall=105ms speedup=191x ops=438 unknown=0 grants=83 inversions=0
PASSED (verdict success as expected)

SEED=2
scenario=clientCrash
bug=
virtual=20.01s wall=105ms speedup=191x ops=438 unknown=0 grants=83 inversions=0
UNEXPECTED verdict failure (expected success)
  fifo: fresh request 59 (c10) granted "r3" at index 184 ahead of 1 earlier waiter(s)
  linearizability: operations on "r3" are not linearizable (10 of 12 linearize)
  fifo: another
report: /tmp/x/clientCrash/2
replay: go run ./cmd/locksim -scenario clientCrash -seed 2

SEED=1
scenario=hotShard
UNEXPECTED verdict failure (expected success)
  liveness: waiter 1 on "r1" never granted
replay: go run ./cmd/locksim -scenario hotShard -seed 1

SEED=2 scenario=hotShard CRASH: boom
replay: go run ./cmd/locksim -scenario hotShard -seed 2
4 runs, 3 not as expected
`

func TestParseSim(t *testing.T) {
	runs, failed, fails, checks := parseSim([]byte(simOutput))
	if runs != 4 || failed != 3 || len(fails) != 3 {
		t.Fatalf("runs %d failed %d fails %d", runs, failed, len(fails))
	}
	if f := fails[0]; f.Scenario != "clientCrash" || f.Seed != 2 || f.Verdict != "failure" || len(f.Messages) != 3 {
		t.Errorf("first failure %+v", f)
	}
	if f := fails[2]; f.Scenario != "hotShard" || f.Seed != 2 || f.Verdict != "crash" {
		t.Errorf("crash run %+v", f)
	}
	want := map[string]int{"fifo": 1, "linearizability": 1, "liveness": 1, "crash": 1}
	if !reflect.DeepEqual(checks, want) {
		t.Errorf("checks %v, want %v", checks, want)
	}
}

func TestJudgeSim(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      runResult
		status string
		caught bool
	}{
		{"pass", runResult{out: []byte("1 runs, 0 not as expected\n")}, "missed", false},
		{"correctness", runResult{out: []byte(simOutput), exitCode: 129}, "caught", true},
		{"liveness", runResult{out: []byte(simOutput), exitCode: 128}, "caught", true},
		{"unknown", runResult{out: []byte(simOutput), exitCode: 130}, "caught", true},
		{"harness crash", runResult{out: []byte(simOutput), exitCode: 127}, "crash", false},
		{"server panic", runResult{out: []byte("SEED=1\nscenario=x\n\npanic: lock: exclusive holder shares the lock\n\ngoroutine 7:\ngithub.com/lockstep/lockstep/core/lock.(*State).assertInvariants(...)\n\t/r/core/lock/state.go:530 +0x1\n"), exitCode: 2}, "panic", false},
		{"timeout after a failure", runResult{out: []byte(simOutput[:strings.Index(simOutput, "SEED=1\nscenario=hotShard")]), exitCode: -1, timedOut: true}, "timeout", true},
		{"timeout before any", runResult{out: []byte("SEED=1\n"), exitCode: -1, timedOut: true}, "timeout", false},
	} {
		s := judgeSim(tc.r)
		if s.Status != tc.status || s.Caught != tc.caught {
			t.Errorf("%s: status %s caught %v, want %s %v", tc.name, s.Status, s.Caught, tc.status, tc.caught)
		}
		if tc.name == "server panic" && !strings.Contains(s.Panic, "core/lock/state.go:530") {
			t.Errorf("panic location missing: %q", s.Panic)
		}
	}
}

func TestJudgeUnit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      runResult
		status string
		failed []string
	}{
		{"pass", runResult{out: []byte("ok  \tx\t0.1s\n")}, "survived", nil},
		{"fail", runResult{out: []byte("--- FAIL: TestApply (0.00s)\n    --- FAIL: TestApply/renew (0.00s)\nFAIL\nFAIL\tx\t0.1s\n"), exitCode: 1}, "caught", []string{"TestApply", "TestApply/renew"}},
		{"panic", runResult{out: []byte("panic: boom\n\ngoroutine 1\nFAIL\tx\t0.1s\n"), exitCode: 2}, "caught", nil},
		{"hang", runResult{out: []byte("panic: test timed out after 3m0s\n"), exitCode: 1}, "timeout", nil},
		{"broken build", runResult{out: []byte("x.go:1: undefined: y\nFAIL\tx [build failed]\n"), exitCode: 1}, "error", nil},
	} {
		u := judgeUnit(tc.r)
		if u.Status != tc.status || !reflect.DeepEqual(u.Failed, tc.failed) {
			t.Errorf("%s: status %s failed %v, want %s %v", tc.name, u.Status, u.Failed, tc.status, tc.failed)
		}
		if u.Caught != (tc.status == "caught" || tc.status == "timeout") {
			t.Errorf("%s: caught %v", tc.name, u.Caught)
		}
	}
}

func TestSummariseGremlins(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n\nfunc f(x int) bool { return x > 0 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := summariseGremlins([]byte(`{"test_efficacy": 50, "mutations_coverage": 80, "mutants_killed": 1, "mutants_lived": 1,
		"files": [{"file_name": "a.go", "mutations": [
			{"type": "CONDITIONALS_BOUNDARY", "status": "LIVED", "line": 3, "column": 31},
			{"type": "CONDITIONALS_NEGATION", "status": "KILLED", "line": 3, "column": 31},
			{"type": "ARITHMETIC_BASE", "status": "TIMED OUT", "line": 3, "column": 1}]}]}`), dir)
	if err != nil {
		t.Fatal(err)
	}
	if g.Efficacy != 50 || g.TimedOut != 1 || len(g.Survivors) != 1 || g.Survivors[0].Source != "func f(x int) bool { return x > 0 }" {
		t.Errorf("%+v", g)
	}
}

func TestTargets(t *testing.T) {
	r := &Report{WantSim: 0.9, WantEfficacy: 90}
	for i := 0; i < 10; i++ {
		r.Mutants = append(r.Mutants, MutantResult{Unit: &UnitResult{Caught: true}, Sim: &SimResult{Caught: i > 0}})
	}
	if !r.targetsMet() {
		t.Error("9 of 10 caught should meet 90 %")
	}
	r.Mutants[1].Sim.Caught = false
	if r.targetsMet() {
		t.Error("8 of 10 caught met the target")
	}
	r.Mutants[1].Sim.Caught = true
	r.Gremlins = &GremlinsResult{Efficacy: 89.9}
	if r.targetsMet() {
		t.Error("efficacy 89.9 met the target")
	}
	// A mutant that could not be judged is caught by nobody.
	r.Gremlins = nil
	r.Mutants[2].Error = "does not apply"
	if s := r.summary(); s.SimCaught != 8 || s.UnitCaught != 9 {
		t.Errorf("summary %+v", s)
	}
}
