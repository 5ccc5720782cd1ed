package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runResult is one bounded command run.
type runResult struct {
	out      []byte
	exitCode int // -1: killed at the deadline or never started
	timedOut bool
	seconds  float64
}

// run executes name args in dir with a hard deadline. The command gets its
// own process group and the whole group is killed at the deadline: go test
// and go run leave child processes that killing the parent alone would
// orphan. Output is stdout and stderr together.
func run(ctx context.Context, timeout time.Duration, dir string, env []string, name string, args ...string) runResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := runResult{out: buf.Bytes(), seconds: time.Since(start).Seconds(), timedOut: ctx.Err() != nil}
	var exit *exec.ExitError
	switch {
	case err == nil:
		r.exitCode = 0
	case r.timedOut:
		r.exitCode = -1
	case errors.As(err, &exit):
		r.exitCode = exit.ExitCode()
	default:
		r.exitCode = -1
		r.out = append(r.out, []byte("\nmutate: "+err.Error())...)
	}
	return r
}

// UnitResult is what the unit tests of the mutated package said.
type UnitResult struct {
	// Status: caught (a test failed), timeout (the suite hung: go test
	// failed it; counted as caught), survived, or error (the tests did not
	// build: the mutant is broken, not caught).
	Status  string   `json:"status"`
	Caught  bool     `json:"caught"`
	Failed  []string `json:"failed_tests,omitempty"`
	Panic   string   `json:"panic,omitempty"`
	Excerpt string   `json:"excerpt,omitempty"`
	Seconds float64  `json:"seconds"`
}

var failLine = regexp.MustCompile(`^(\s*)--- FAIL: (\S+)`)

// judgeUnit classifies a go test run.
func judgeUnit(r runResult) UnitResult {
	u := UnitResult{Seconds: round1(r.seconds)}
	out := string(r.out)
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if m := failLine.FindStringSubmatch(line); m != nil && !seen[m[2]] && len(u.Failed) < 6 {
			seen[m[2]] = true
			u.Failed = append(u.Failed, m[2])
		}
		if u.Panic == "" && strings.HasPrefix(line, "panic: ") {
			u.Panic = truncate(line, 160)
		}
	}
	switch {
	case strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]"):
		u.Status = "error"
	case r.exitCode == 0:
		u.Status = "survived"
	case r.timedOut || strings.Contains(out, "panic: test timed out"):
		u.Status, u.Caught = "timeout", true
	case len(u.Failed) > 0 || u.Panic != "" || strings.Contains(out, "\nFAIL"):
		u.Status, u.Caught = "caught", true
	default:
		u.Status = "error"
	}
	if u.Status != "survived" {
		u.Excerpt = excerpt(out, 12)
	}
	return u
}

// SimFailure is one scenario run the simulator reported as not as expected.
type SimFailure struct {
	Scenario string   `json:"scenario"`
	Seed     int64    `json:"seed"`
	Verdict  string   `json:"verdict"`
	Messages []string `json:"messages,omitempty"`
}

// SimResult is what `locksim -all -seeds` said about a mutated server.
type SimResult struct {
	// Status: caught (locksim exited 128 liveness, 129 correctness or 130
	// check unfinished, having printed the failing runs: a server panic the
	// harness recovered is a correctness verdict, a stalled run a liveness
	// one), missed (exit 0), panic (a panic outside what the harness
	// recovers took the process down: no verdict, not counted as caught),
	// crash (exit 127, harness crash),
	// timeout (killed at the deadline; caught only if a failing run was
	// printed before), or error (the simulator did not build).
	Status   string `json:"status"`
	Caught   bool   `json:"caught"`
	ExitCode int    `json:"exit_code"`
	Runs     int    `json:"runs"`
	Failed   int    `json:"failed_runs"`
	// First is the first failing run in locksim's order (scenarios by
	// name, then seeds).
	First *SimFailure `json:"first,omitempty"`
	// Checks counts failing runs per check (a run may count for several).
	Checks  map[string]int `json:"checks,omitempty"`
	Panic   string         `json:"panic,omitempty"`
	Excerpt string         `json:"excerpt,omitempty"`
	// Sweeps is "caught/run" over the -sim-sweeps repetitions.
	Sweeps       string  `json:"sweeps"`
	BuildSeconds float64 `json:"build_seconds"`
	Seconds      float64 `json:"seconds"`
}

var (
	summaryLine    = regexp.MustCompile(`^(\d+) runs, (\d+) not as expected$`)
	unexpectedLine = regexp.MustCompile(`^UNEXPECTED verdict (\S+)`)
)

// parseSim reads locksim's output: per run a "SEED=" line, the parameters
// (scenario=...), then PASSED, or "UNEXPECTED verdict V (expected E)" with
// one indented line per violation ("check: message"); "CRASH:" marks a run
// the harness could not complete.
func parseSim(out []byte) (runs, failed int, fails []SimFailure, checks map[string]int) {
	checks = map[string]int{}
	var seed int64
	scenario := ""
	var cur *SimFailure
	flush := func() {
		if cur == nil {
			return
		}
		seenCheck := map[string]bool{}
		for _, m := range cur.Messages {
			c, _, _ := strings.Cut(m, ":")
			if !seenCheck[c] {
				seenCheck[c] = true
				checks[c]++
			}
		}
		fails = append(fails, *cur)
		cur = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "SEED="):
			flush()
			f := strings.Fields(strings.TrimPrefix(line, "SEED="))
			seed, _ = strconv.ParseInt(f[0], 10, 64)
			if len(f) > 1 && strings.HasPrefix(f[1], "scenario=") {
				scenario = strings.TrimPrefix(f[1], "scenario=")
			}
			if i := strings.Index(line, "CRASH:"); i >= 0 {
				cur = &SimFailure{Scenario: scenario, Seed: seed, Verdict: "crash", Messages: []string{"crash: " + truncate(strings.TrimSpace(line[i+6:]), 200)}}
			}
		case strings.HasPrefix(line, "scenario="):
			scenario = strings.TrimPrefix(line, "scenario=")
		case unexpectedLine.MatchString(line):
			flush()
			cur = &SimFailure{Scenario: scenario, Seed: seed, Verdict: unexpectedLine.FindStringSubmatch(line)[1]}
		case cur != nil && strings.HasPrefix(line, "  "):
			if len(cur.Messages) < 5 {
				cur.Messages = append(cur.Messages, truncate(strings.TrimSpace(line), 240))
			}
		case summaryLine.MatchString(line):
			flush()
			m := summaryLine.FindStringSubmatch(line)
			runs, _ = strconv.Atoi(m[1])
			failed, _ = strconv.Atoi(m[2])
		}
	}
	flush()
	return runs, failed, fails, checks
}

// judgeSim classifies a locksim run.
func judgeSim(r runResult) SimResult {
	s := SimResult{ExitCode: r.exitCode, Seconds: round1(r.seconds)}
	var fails []SimFailure
	s.Runs, s.Failed, fails, s.Checks = parseSim(r.out)
	if len(fails) > 0 {
		s.First = &fails[0]
	}
	if s.Failed == 0 {
		s.Failed = len(fails) // a run cut short prints no summary
	}
	out := string(r.out)
	if i := strings.Index(out, "\npanic: "); i >= 0 {
		s.Panic = truncate(strings.SplitN(out[i+1:], "\n", 2)[0], 200)
		if f := firstFrame(out[i:], "core/lock/"); f != "" {
			s.Panic += " at " + f
		}
	}
	switch {
	case r.timedOut:
		s.Status = "timeout"
		s.Caught = len(fails) > 0 && fails[0].Verdict != "crash"
	case r.exitCode == exitLiveness || r.exitCode == exitCorrectness || r.exitCode == exitUnknown:
		s.Status, s.Caught = "caught", true
	case r.exitCode == 0:
		s.Status = "missed"
	case r.exitCode == exitCrash:
		s.Status = "crash"
	case s.Panic != "":
		s.Status = "panic"
	default:
		s.Status = "error"
	}
	if !s.Caught && s.Status != "missed" {
		s.Excerpt = excerpt(out, 12)
	}
	return s
}

// locksim's exit codes (cmd/locksim): 127 harness crash, 128 liveness only,
// 129 correctness, 130 a check could not finish.
const (
	exitCrash       = 127
	exitLiveness    = 128
	exitCorrectness = 129
	exitUnknown     = 130
)

// firstFrame returns the first "file.go:line" of a stack trace under dir.
func firstFrame(trace, dir string) string {
	for _, line := range strings.Split(trace, "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, dir); i >= 0 && strings.Contains(line, ".go:") {
			f := line[i:]
			if j := strings.IndexByte(f, ' '); j >= 0 {
				f = f[:j]
			}
			return f
		}
	}
	return ""
}

// excerpt returns the last n non-empty lines of out: failures end there.
func excerpt(out string, n int) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, truncate(l, 200))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

func fmtSeconds(s float64) string { return fmt.Sprintf("%.0f s", s) }
