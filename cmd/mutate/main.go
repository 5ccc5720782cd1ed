// Command mutate measures how much of the lock state machine's behaviour the
// tests pin down. It runs two kinds of mutants:
//
//   - semantic mutants: hand-written, realistic bugs in core/lock, one
//     unified diff each under cmd/mutate/mutants/ (a header names the mutant,
//     its concern and what it breaks). For each it records whether the unit
//     tests of core/lock fail and whether the simulator (`locksim -all
//     -seeds 1..N`, what `make sim` runs) reports a failure;
//   - gremlins v0.6.0 on core/lock (operator mutants), for test efficacy.
//
// The repository is never written: a mutant is applied to copies of the
// files it touches and the go command reads them through -overlay, so
// mutants may run in parallel (-jobs) and beside other work on the tree.
// Every step has a deadline. Results (mutants.json, mutants.md, gremlins.json,
// gremlins.txt, COMMAND.txt) go to -out.
//
//	go run ./cmd/mutate                         # everything (make mutate)
//	go run ./cmd/mutate -only renew-keeps-expiry -gremlins ''
//	go run ./cmd/mutate -check                  # patches apply and build
//
// Exit status: 0 done and targets met, 1 the run itself failed (a patch no
// longer applies or builds, the unmutated tree fails its own tests or
// simulation, gremlins failed), 3 done but a target (-want-sim,
// -want-efficacy) was missed.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

type options struct {
	mutantsDir   string
	out          string
	seeds        string
	only         map[string]bool
	jobs         int
	control      bool
	check        bool
	render       string
	keep         bool
	gremlins     string
	simSweeps    int
	unitTimeout  time.Duration
	simTimeout   time.Duration
	buildTimeout time.Duration
	gremTimeout  time.Duration
	wantSim      float64
	wantEfficacy float64
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	fs.StringVar(&o.mutantsDir, "mutants", "cmd/mutate/mutants", "directory of *.patch semantic mutants (relative to the repository root)")
	fs.StringVar(&o.out, "out", "results/mutation", "output directory")
	fs.StringVar(&o.seeds, "seeds", "1..10", "seed range of the simulator sweep (make sim uses 1..10)")
	only := fs.String("only", "", "comma-separated mutant names to run (default all)")
	fs.IntVar(&o.jobs, "jobs", 1, "mutants run at once (timings are per mutant; >1 inflates them on a small machine)")
	fs.BoolVar(&o.control, "control", true, "first run the unit tests and the simulator on the unmutated tree; both must pass")
	fs.BoolVar(&o.check, "check", false, "only apply and build every mutant, then exit")
	fs.StringVar(&o.render, "render", "", "only rewrite `dir`/mutants.md (and COMMAND.txt) from dir/mutants.json, then exit")
	fs.BoolVar(&o.keep, "keep", false, "keep each mutant's scratch directory (printed)")
	fs.StringVar(&o.gremlins, "gremlins", "gremlins", "gremlins binary; empty skips gremlins")
	fs.IntVar(&o.simSweeps, "sim-sweeps", 1, "simulator sweeps per mutant (the simulator is not deterministic per seed)")
	fs.DurationVar(&o.unitTimeout, "unit-timeout", 3*time.Minute, "deadline of one mutant's unit tests")
	fs.DurationVar(&o.simTimeout, "sim-timeout", 10*time.Minute, "deadline of one mutant's simulator sweep")
	fs.DurationVar(&o.buildTimeout, "build-timeout", 5*time.Minute, "deadline of one build")
	fs.DurationVar(&o.gremTimeout, "gremlins-timeout", 45*time.Minute, "deadline of the gremlins run")
	fs.Float64Var(&o.wantSim, "want-sim", 0.90, "target: fraction of semantic mutants the simulator catches (0 disables)")
	fs.Float64Var(&o.wantEfficacy, "want-efficacy", 90, "target: gremlins test efficacy in percent (0 disables)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if lo, hi, ok := strings.Cut(o.seeds, ".."); !ok || lo == "" || hi == "" {
		return o, fmt.Errorf("-seeds %q: want a..b", o.seeds)
	}
	if *only != "" {
		o.only = map[string]bool{}
		for _, n := range strings.Split(*only, ",") {
			o.only[strings.TrimSpace(n)] = true
		}
	}
	if o.jobs < 1 {
		o.jobs = 1
	}
	if o.simSweeps < 1 {
		o.simSweeps = 1
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	os.Exit(mainErr(o))
}

func mainErr(o options) int {
	ctx := context.Background()
	if o.render != "" {
		return render(o.render)
	}
	root, err := os.Getwd()
	if err != nil {
		return fail(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return fail(fmt.Errorf("run from the repository root (no go.mod here)"))
	}
	mutants, err := loadMutants(root, o.mutantsDir, o.only)
	if err != nil {
		return fail(err)
	}
	started := time.Now()
	rep := &Report{
		Command: commandLine(), Started: started.Format(time.RFC3339), Machine: machine(),
		GoVersion: runtime.Version(), Commit: commit(root), Seeds: o.seeds,
		WantSim: o.wantSim, WantEfficacy: o.wantEfficacy,
	}
	if o.check {
		return checkAll(ctx, o, root, mutants)
	}
	if o.gremlins != "" {
		// Fail before an hour of work, not after it.
		if _, err := exec.LookPath(o.gremlins); err != nil {
			return fail(fmt.Errorf("gremlins not found (%v); install it with go install github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0, or pass -gremlins ''", err))
		}
	}
	out := o.out
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fail(err)
	}
	code := 0
	// Mutants are judged against the tree as it is while they run: an edit
	// in the middle would make rows measure different code.
	before, err := treeHash(root)
	if err != nil {
		return fail(err)
	}
	if o.control {
		fmt.Println("control: unmutated tree")
		c := runMutant(ctx, o, root, nil)
		rep.Control = &c
		fmt.Printf("control: unit %s, sim %s (%d runs) in %s\n", c.Unit.Status, c.Sim.Status, c.Sim.Runs, fmtSeconds(c.Seconds))
		if c.Error != "" || c.Unit.Status != "survived" || c.Sim.Status != "missed" {
			fmt.Fprintf(os.Stderr, "mutate: the unmutated tree must pass its unit tests and the simulator; a mutant's failure would mean nothing\n%s\n%s\n%s\n", c.Error, c.Unit.Excerpt, c.Sim.Excerpt)
			_ = rep.write(out)
			return 1
		}
	}
	results := make([]MutantResult, len(mutants))
	done := make([]bool, len(mutants))
	var mu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < o.jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := runMutant(ctx, o, root, &mutants[i])
				mu.Lock()
				results[i], done[i] = r, true
				rep.Mutants = nil
				for j := range results {
					if done[j] {
						rep.Mutants = append(rep.Mutants, results[j])
					}
				}
				// Partial results survive an interrupted run.
				if err := rep.write(out); err != nil {
					fmt.Fprintln(os.Stderr, "mutate:", err)
				}
				fmt.Println(progressLine(len(rep.Mutants), len(mutants), r))
				mu.Unlock()
			}
		}()
	}
	for i := range mutants {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(os.Stderr, "mutate: %s: %s\n", r.Name, r.Error)
			code = 1
		}
	}
	if o.gremlins != "" {
		fmt.Println("gremlins: core/lock (takes a while)")
		g, err := runGremlins(ctx, o.gremlins, root, "core/lock",
			filepath.Join(out, "gremlins.json"), filepath.Join(out, "gremlins.txt"), o.gremTimeout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			rep.GremlinsError = err.Error()
			code = 1
		} else {
			rep.Gremlins = g
			fmt.Printf("gremlins: efficacy %.2f %%, mutant coverage %.2f %% (%d killed, %d lived, %d timed out, %d not covered) in %s\n",
				g.Efficacy, g.Coverage, g.Killed, g.Lived, g.TimedOut, g.NotCov, fmtSeconds(g.Seconds))
		}
	}
	rep.Seconds = round1(time.Since(started).Seconds())
	if after, err := treeHash(root); err != nil || after != before {
		rep.TreeChanged = true
		fmt.Fprintln(os.Stderr, "mutate: the source tree changed during the run; the rows measured different code: run again")
		code = 1
	}
	if err := rep.write(out); err != nil {
		return fail(err)
	}
	s := rep.summary()
	fmt.Printf("semantic mutants: %d; unit tests caught %d, simulator caught %d (%.0f %%); results in %s\n",
		s.Total, s.UnitCaught, s.SimCaught, 100*s.SimFraction, o.out)
	if code == 0 && !rep.targetsMet() {
		fmt.Println("mutate: TARGET NOT MET (see mutants.md)")
		code = 3
	}
	return code
}

// MutantResult is one mutant's (or the control's) outcome.
type MutantResult struct {
	Mutant
	// Error says the mutant could not be judged: it no longer applies or
	// does not build. The run fails.
	Error   string      `json:"error,omitempty"`
	Unit    *UnitResult `json:"unit,omitempty"`
	Sim     *SimResult  `json:"sim,omitempty"`
	Seconds float64     `json:"seconds"`
}

// runMutant stages m (nil: the unmutated tree), builds the simulator, runs
// the unit tests and the sweep.
func runMutant(ctx context.Context, o options, root string, m *Mutant) MutantResult {
	start := time.Now()
	var res MutantResult
	name := "control"
	if m != nil {
		res.Mutant, name = *m, m.Name
	}
	scratch, err := os.MkdirTemp("", "mutate-"+name+"-")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	if o.keep {
		fmt.Println("scratch:", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	var overlay []string
	if m != nil {
		ov, err := stage(ctx, root, scratch, *m)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		overlay = []string{"-overlay", ov}
	}
	sim := filepath.Join(scratch, "locksim")
	b := run(ctx, o.buildTimeout, root, nil, "go", append(append([]string{"build"}, overlay...), "-o", sim, "./cmd/locksim")...)
	if b.exitCode != 0 {
		res.Error = "build: " + excerpt(string(b.out), 10)
		return res
	}
	// go test's own -timeout fails a hung suite with a stack; ours is the
	// backstop should the build hang.
	// -rapid.nofailfile: a failing property must not leave testdata/ files
	// in the repository (rapid writes them next to the tests).
	u := run(ctx, o.unitTimeout+o.buildTimeout, root, nil, "go",
		append(append([]string{"test"}, overlay...), "-count=1", "-timeout", o.unitTimeout.String(), "./core/lock/", "-args", "-rapid.nofailfile")...)
	unit := judgeUnit(u)
	res.Unit = &unit
	if unit.Status == "error" {
		res.Error = "unit tests did not run: " + unit.Excerpt
	}
	// The same seeds do not replay the same histories (see EXPERIMENTS.md),
	// so with -sim-sweeps > 1 a mutant is caught when any sweep catches it;
	// the first catching sweep is the one reported, and Sweeps says how many
	// of them caught it.
	var simRes SimResult
	caught := 0
	for i := 0; i < o.simSweeps; i++ {
		r := judgeSim(run(ctx, o.simTimeout, root, nil, sim, "-all", "-seeds", o.seeds, "-results", filepath.Join(scratch, "sim", fmt.Sprint(i))))
		if r.Caught {
			caught++
		}
		if i == 0 || (r.Caught && !simRes.Caught) {
			secs := simRes.Seconds
			simRes = r
			simRes.Seconds += secs
		} else {
			simRes.Seconds += r.Seconds
		}
	}
	simRes.Sweeps = fmt.Sprintf("%d/%d", caught, o.simSweeps)
	simRes.BuildSeconds = round1(b.seconds)
	res.Sim = &simRes
	if simRes.Status == "error" || simRes.Status == "crash" {
		// Not a verdict on the mutant, but worth reading: keep going.
		fmt.Fprintf(os.Stderr, "mutate: %s: simulator %s (exit %d):\n%s\n", name, simRes.Status, simRes.ExitCode, simRes.Excerpt)
	}
	res.Seconds = round1(time.Since(start).Seconds())
	return res
}

// render rewrites the Markdown of an earlier run from its JSON.
func render(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "mutants.json"))
	if err != nil {
		return fail(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fail(fmt.Errorf("%s/mutants.json: %w", dir, err))
	}
	if err := rep.writeText(dir); err != nil {
		return fail(err)
	}
	return 0
}

// treeHash digests every file the measurement reads (Go sources, module
// files, scenario definitions, the mutants), skipping results/ and dot
// directories.
func treeHash(root string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "results" || (rel != "." && strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".mod", ".sum", ".json", ".patch":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

// checkAll applies and builds every mutant (server and unit tests) without
// running anything: a quick way to find patches the tree has moved away from.
func checkAll(ctx context.Context, o options, root string, mutants []Mutant) int {
	code := 0
	for _, m := range mutants {
		scratch, err := os.MkdirTemp("", "mutate-check-")
		if err != nil {
			return fail(err)
		}
		ov, err := stage(ctx, root, scratch, m)
		if err == nil {
			r := run(ctx, o.buildTimeout, root, nil, "go", "vet", "-overlay", ov, "./core/lock/", "./core/node/")
			if r.exitCode != 0 {
				err = fmt.Errorf("go vet: %s", excerpt(string(r.out), 10))
			}
		}
		os.RemoveAll(scratch)
		if err != nil {
			fmt.Printf("FAIL %s: %v\n", m.Name, err)
			code = 1
			continue
		}
		fmt.Printf("ok   %s (%s)\n", m.Name, strings.Join(m.Files, ", "))
	}
	return code
}

func progressLine(n, total int, r MutantResult) string {
	if r.Error != "" {
		return fmt.Sprintf("[%d/%d] %-34s ERROR %s", n, total, r.Name, truncate(r.Error, 120))
	}
	return fmt.Sprintf("[%d/%d] %-34s unit %-8s sim %-8s %s", n, total, r.Name, r.Unit.Status, r.Sim.Status, fmtSeconds(r.Seconds))
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "mutate:", err)
	return 1
}

func commandLine() string {
	args := []string{"go", "run", "./cmd/mutate"}
	for _, a := range os.Args[1:] {
		if a == "" || strings.ContainsAny(a, " '\"$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}

// machine describes the CPU, core count and memory, for the record.
func machine() string {
	model, mem := "", ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
		}
	}
	return fmt.Sprintf("%s, %d cores%s, %s/%s", model, runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH)
}

// commit names the tree measured: HEAD, marked when core/ has local changes.
func commit(root string) string {
	r := run(context.Background(), time.Minute, root, nil, "git", "rev-parse", "--short", "HEAD")
	c := strings.TrimSpace(string(r.out))
	if d := run(context.Background(), time.Minute, root, nil, "git", "status", "--porcelain", "--", "core"); strings.TrimSpace(string(d.out)) != "" {
		c += " (core/ modified)"
	}
	return c
}
