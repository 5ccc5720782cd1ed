package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Report is everything one run measured; mutants.json is its JSON form.
type Report struct {
	Command       string          `json:"command"`
	Started       string          `json:"started"`
	Machine       string          `json:"machine"`
	GoVersion     string          `json:"go_version"`
	Commit        string          `json:"commit"`
	Seeds         string          `json:"seeds"`
	Seconds       float64         `json:"seconds"`
	WantSim       float64         `json:"want_sim_fraction"`
	WantEfficacy  float64         `json:"want_efficacy_percent"`
	Summary       Summary         `json:"summary"`
	Control       *MutantResult   `json:"control,omitempty"`
	Mutants       []MutantResult  `json:"mutants"`
	Gremlins      *GremlinsResult `json:"gremlins,omitempty"`
	GremlinsError string          `json:"gremlins_error,omitempty"`
	// TreeChanged: the sources changed during the run; the results are void.
	TreeChanged bool `json:"tree_changed,omitempty"`
}

// Summary counts the semantic mutants' outcomes (mutants with an Error are
// counted in Total and caught by nobody).
type Summary struct {
	Total       int      `json:"total"`
	UnitCaught  int      `json:"unit_caught"`
	SimCaught   int      `json:"sim_caught"`
	SimFraction float64  `json:"sim_fraction"`
	SimPanics   int      `json:"sim_panics"`
	SimMissed   []string `json:"sim_missed"`
	UnitMissed  []string `json:"unit_missed"`
	Neither     []string `json:"caught_by_neither"`
}

func (r *Report) summary() Summary {
	var s Summary
	for _, m := range r.Mutants {
		s.Total++
		unit := m.Unit != nil && m.Unit.Caught && m.Error == ""
		sim := m.Sim != nil && m.Sim.Caught && m.Error == ""
		if unit {
			s.UnitCaught++
		} else {
			s.UnitMissed = append(s.UnitMissed, m.Name)
		}
		if sim {
			s.SimCaught++
		} else {
			s.SimMissed = append(s.SimMissed, m.Name)
		}
		if m.Sim != nil && m.Sim.Status == "panic" {
			s.SimPanics++
		}
		if !unit && !sim {
			s.Neither = append(s.Neither, m.Name)
		}
	}
	if s.Total > 0 {
		s.SimFraction = float64(s.SimCaught) / float64(s.Total)
	}
	return s
}

func (r *Report) targetsMet() bool {
	s := r.summary()
	if r.WantSim > 0 && s.SimFraction < r.WantSim {
		return false
	}
	if r.WantEfficacy > 0 && r.Gremlins != nil && r.Gremlins.Efficacy < r.WantEfficacy {
		return false
	}
	return true
}

// write saves mutants.json, mutants.md and COMMAND.txt under dir.
func (r *Report) write(dir string) error {
	r.Summary = r.summary()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "mutants.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return r.writeText(dir)
}

// writeText saves the human-readable files, mutants.md and COMMAND.txt.
func (r *Report) writeText(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "mutants.md"), []byte(r.markdown()), 0o644); err != nil {
		return err
	}
	cmd := fmt.Sprintf("%s\n\n# run from the repository root (make mutate); started %s\n# machine: %s; %s; commit %s\n# semantic mutants: cmd/mutate/mutants/*.patch; simulator sweep per mutant: locksim -all -seeds %s\n",
		r.Command, r.Started, r.Machine, r.GoVersion, r.Commit, r.Seeds)
	if r.Gremlins != nil {
		cmd += "# gremlins: " + r.Gremlins.Command + "\n"
	}
	return os.WriteFile(filepath.Join(dir, "COMMAND.txt"), []byte(cmd), 0o644)
}

func (r *Report) markdown() string {
	var b strings.Builder
	s := r.summary()
	fmt.Fprintf(&b, "# Mutation testing: core/lock\n\n")
	fmt.Fprintf(&b, "`%s` — %s, %s, commit %s, started %s, %s in all.\n\n", r.Command, r.Machine, r.GoVersion, r.Commit, r.Started, fmtSeconds(r.Seconds))
	if r.TreeChanged {
		b.WriteString("**The source tree changed during this run: the rows measured different code. Run again.**\n\n")
	}
	fmt.Fprintf(&b, "Semantic mutants: **%d**. Unit tests (`go test ./core/lock/`) caught **%d**; the simulator (`locksim -all -seeds %s`, as `make sim`) caught **%d (%.0f %%)**",
		s.Total, s.UnitCaught, r.Seeds, s.SimCaught, 100*s.SimFraction)
	if r.WantSim > 0 {
		met := "met"
		if s.SimFraction < r.WantSim {
			met = "**not met**"
		}
		fmt.Fprintf(&b, " (target ≥ %.0f %%: %s)", 100*r.WantSim, met)
	}
	fmt.Fprintf(&b, ".\n\n")
	b.WriteString("How a mutant counts as caught: *unit* — `go test` fails (a failing test, a panic in a test, or the suite hanging past its deadline). " +
		"*sim* — locksim exits 128 (liveness), 129 (correctness) or 130 (a check could not finish) after printing the failing run. " +
		"A panic in the server's state machine apply or HTTP handler is recovered by the simulator and judged a correctness violation (check `panic`, with its stack); " +
		"a run whose virtual time stands still for a minute of wall time (a goroutine that never blocks) is reported stalled, with a goroutine dump, and exits 128. " +
		"A panic anywhere else still kills the simulator without a verdict and is **not** counted (status `panic`), nor is a harness crash (exit 127). " +
		"A sweep killed at its deadline counts only if it had already printed a failing run.\n\n")
	if c := r.Control; c != nil && c.Unit != nil && c.Sim != nil {
		fmt.Fprintf(&b, "Control (unmutated tree): unit %s, simulator %s (%d runs, %d not as expected), %s.\n\n", c.Unit.Status, c.Sim.Status, c.Sim.Runs, c.Sim.Failed, fmtSeconds(c.Seconds))
	}
	b.WriteString("| mutant | concern | unit tests | simulator | first simulator failure | time |\n|---|---|---|---|---|--:|\n")
	for _, m := range r.Mutants {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", m.Name, m.Concern, unitCell(m), simCell(m), firstCell(m), fmtSeconds(m.Seconds))
	}
	if len(s.SimMissed) > 0 {
		fmt.Fprintf(&b, "\nMissed by the simulator: %s.\n", backticks(s.SimMissed))
	}
	if len(s.Neither) > 0 {
		fmt.Fprintf(&b, "\nCaught by neither: %s.\n", backticks(s.Neither))
	}
	b.WriteString("\n## The mutants\n\n| mutant | concern | bug | files |\n|---|---|---|---|\n")
	for _, m := range r.Mutants {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.Name, m.Concern, md(m.Description), strings.Join(m.Files, ", "))
	}
	if g := r.Gremlins; g != nil {
		fmt.Fprintf(&b, "\n## gremlins v0.6.0 on core/lock\n\n`%s` (%s)\n\n", g.Command, fmtSeconds(g.Seconds))
		fmt.Fprintf(&b, "Test efficacy **%.2f %%** (killed / (killed + lived))", g.Efficacy)
		if r.WantEfficacy > 0 {
			met := "met"
			if g.Efficacy < r.WantEfficacy {
				met = "**not met**"
			}
			fmt.Fprintf(&b, ", target ≥ %.0f %%: %s", r.WantEfficacy, met)
		}
		fmt.Fprintf(&b, "; mutant coverage **%.2f %%**. Killed %d, lived %d, timed out %d, not covered %d, not viable %d.\n\n",
			g.Coverage, g.Killed, g.Lived, g.TimedOut, g.NotCov, g.NotViab)
		if len(g.Survivors) > 0 {
			b.WriteString("| survivor | mutation | source |\n|---|---|---|\n")
			for _, sv := range g.Survivors {
				fmt.Fprintf(&b, "| %s:%d:%d | %s | `%s` |\n", sv.File, sv.Line, sv.Column, sv.Type, md(sv.Source))
			}
		}
	} else if r.GremlinsError != "" {
		fmt.Fprintf(&b, "\n## gremlins\n\nFailed: %s\n", md(r.GremlinsError))
	}
	return b.String()
}

func unitCell(m MutantResult) string {
	if m.Error != "" {
		return "ERROR: " + md(truncate(m.Error, 80))
	}
	u := m.Unit
	switch u.Status {
	case "caught", "timeout":
		t := u.Status
		if len(u.Failed) > 0 {
			t += ": " + strings.Join(u.Failed[:min(3, len(u.Failed))], ", ")
		} else if u.Panic != "" {
			t += ": " + md(truncate(u.Panic, 60))
		}
		return t
	}
	return "**" + u.Status + "**"
}

func simCell(m MutantResult) string {
	if m.Error != "" || m.Sim == nil {
		return "–"
	}
	s := m.Sim
	switch s.Status {
	case "caught", "timeout":
		var checks []string
		for c, n := range s.Checks {
			checks = append(checks, fmt.Sprintf("%s %d", c, n))
		}
		sort.Strings(checks)
		t := fmt.Sprintf("%s, %d/%d runs", s.Status, s.Failed, s.Runs)
		if s.Sweeps != "" && s.Sweeps != "1/1" {
			t += ", " + s.Sweeps + " sweeps"
		}
		if !s.Caught {
			t = "**" + t + "**"
		}
		if len(checks) > 0 {
			t += " (" + strings.Join(checks, ", ") + ")"
		}
		return t
	case "panic":
		return "**panic** (not counted): " + md(truncate(s.Panic, 90))
	}
	if s.Sweeps != "" && !strings.HasSuffix(s.Sweeps, "/1") {
		return "**" + s.Status + "**, " + s.Sweeps + " sweeps"
	}
	return "**" + s.Status + "**"
}

func firstCell(m MutantResult) string {
	if m.Sim == nil || m.Sim.First == nil {
		return ""
	}
	f := m.Sim.First
	msg := ""
	if len(f.Messages) > 0 {
		msg = ": " + md(truncate(f.Messages[0], 110))
	}
	return fmt.Sprintf("%s seed %d%s", f.Scenario, f.Seed, msg)
}

// md keeps a string from breaking a Markdown table cell (GitHub renders \|
// as a pipe, in code spans too).
func md(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "`", "'")
	return strings.ReplaceAll(s, "\n", " ")
}

func backticks(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
	}
	return strings.Join(out, ", ")
}
