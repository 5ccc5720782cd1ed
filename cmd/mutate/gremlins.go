package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// GremlinsReport is the part of gremlins' -o JSON this tool reads.
type GremlinsReport struct {
	TestEfficacy      float64 `json:"test_efficacy"`
	MutationsCoverage float64 `json:"mutations_coverage"`
	MutantsTotal      int     `json:"mutants_total"`
	MutantsKilled     int     `json:"mutants_killed"`
	MutantsLived      int     `json:"mutants_lived"`
	MutantsNotViable  int     `json:"mutants_not_viable"`
	MutantsNotCovered int     `json:"mutants_not_covered"`
	ElapsedTime       float64 `json:"elapsed_time"`
	Files             []struct {
		Filename  string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

// Survivor is one gremlins mutant the tests did not kill.
type Survivor struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Type   string `json:"type"`
	Status string `json:"status"`
	Source string `json:"source"`
}

// GremlinsResult summarises one gremlins run.
type GremlinsResult struct {
	Command  string         `json:"command"`
	Report   GremlinsReport `json:"-"`
	Efficacy float64        `json:"efficacy_percent"`
	Coverage float64        `json:"mutant_coverage_percent"`
	Killed   int            `json:"killed"`
	Lived    int            `json:"lived"`
	TimedOut int            `json:"timed_out"`
	NotCov   int            `json:"not_covered"`
	NotViab  int            `json:"not_viable"`
	// Survivors are the LIVED mutants, with their source line.
	Survivors []Survivor `json:"survivors"`
	Seconds   float64    `json:"seconds"`
}

// runGremlins runs gremlins on pkgDir. It must run inside the package
// directory without a path argument (v0.6.0 fails when given "."), and
// with a large timeout coefficient, or every mutant times out while its
// test binary rebuilds. The JSON report is written to jsonOut, the console
// output to textOut.
func runGremlins(ctx context.Context, bin, root, pkgDir, jsonOut, textOut string, timeout time.Duration) (*GremlinsResult, error) {
	args := []string{"unleash", "--timeout-coefficient", "60", "-o", jsonOut}
	r := run(ctx, timeout, filepath.Join(root, pkgDir), nil, bin, args...)
	if err := os.WriteFile(textOut, r.out, 0o644); err != nil {
		return nil, err
	}
	shown := append([]string(nil), args...)
	if rel, err := filepath.Rel(filepath.Join(root, pkgDir), jsonOut); err == nil {
		shown[len(shown)-1] = rel
	}
	cmdline := fmt.Sprintf("cd %s && %s %s", pkgDir, filepath.Base(bin), strings.Join(shown, " "))
	if r.timedOut {
		return nil, fmt.Errorf("gremlins: killed after %s (see %s)", timeout, textOut)
	}
	if r.exitCode != 0 {
		return nil, fmt.Errorf("gremlins: exit %d (see %s):\n%s", r.exitCode, textOut, excerpt(string(r.out), 8))
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		return nil, fmt.Errorf("gremlins wrote no report: %w", err)
	}
	g, err := summariseGremlins(b, filepath.Join(root, pkgDir))
	if err != nil {
		return nil, err
	}
	g.Command, g.Seconds = cmdline, round1(r.seconds)
	return g, nil
}

// summariseGremlins reads a gremlins JSON report; srcDir is where the
// mutated files are, for quoting survivors' source lines.
func summariseGremlins(b []byte, srcDir string) (*GremlinsResult, error) {
	var rep GremlinsReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("gremlins report: %w", err)
	}
	g := &GremlinsResult{
		Report: rep, Efficacy: rep.TestEfficacy, Coverage: rep.MutationsCoverage,
		Killed: rep.MutantsKilled, Lived: rep.MutantsLived,
		NotCov: rep.MutantsNotCovered, NotViab: rep.MutantsNotViable,
	}
	lines := map[string][]string{}
	for _, f := range rep.Files {
		for _, m := range f.Mutations {
			switch m.Status {
			case "TIMED OUT":
				g.TimedOut++
			case "LIVED":
				if _, ok := lines[f.Filename]; !ok {
					src, _ := os.ReadFile(filepath.Join(srcDir, f.Filename))
					lines[f.Filename] = strings.Split(string(src), "\n")
				}
				s := Survivor{File: f.Filename, Line: m.Line, Column: m.Column, Type: m.Type, Status: m.Status}
				if l := lines[f.Filename]; m.Line >= 1 && m.Line <= len(l) {
					s.Source = strings.TrimSpace(l[m.Line-1])
				}
				g.Survivors = append(g.Survivors, s)
			}
		}
	}
	sort.Slice(g.Survivors, func(i, j int) bool {
		a, b := g.Survivors[i], g.Survivors[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return g, nil
}
