//go:build !lockstep_faults

package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// The README's flag table is generated from the flag sets, between these
// markers; a production build's flags (a lockstep_faults build has more).
const (
	flagTableBegin = "<!-- lockd flags: begin (generated: go test ./cmd/lockd -run TestREADMEFlagTable -update) -->"
	flagTableEnd   = "<!-- lockd flags: end -->"
)

var update = flag.Bool("update", false, "rewrite README.md's lockd flag table from the flag sets")

// TestREADMEFlagTable: goal — README's lockd flag table is the flag sets
// themselves: every flag of every form, with its default and usage, so a
// flag added, renamed or reworded without the README fails here. Method:
// render the table from flagSets() and compare it with the README's
// section between the markers; -update writes it there instead.
func TestREADMEFlagTable(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	begin, end := strings.Index(readme, flagTableBegin), strings.Index(readme, flagTableEnd)
	if begin < 0 || end < begin {
		t.Fatalf("README.md lacks the markers %q ... %q", flagTableBegin, flagTableEnd)
	}
	got := readme[begin+len(flagTableBegin) : end]
	want := "\n" + flagTable(flagSets()) + "\n"
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(readmePath, []byte(readme[:begin+len(flagTableBegin)]+want+readme[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's lockd flag table differs from the flag sets; run go test ./cmd/lockd -run TestREADMEFlagTable -update\n%s",
		lineDiff(got, want))
}

// flagTable renders the flags of sets as a Markdown table: one row per
// flag and meaning, with the forms (a set's name after "lockd") that
// share it. Rows are sorted by flag name.
func flagTable(sets []*flag.FlagSet) string {
	type row struct {
		name, def, usage string
		forms            []string
	}
	var rows []*row
	for _, fs := range sets {
		form := cmp.Or(strings.TrimSpace(strings.TrimPrefix(fs.Name(), "lockd")), "member")
		fs.VisitAll(func(f *flag.Flag) {
			for _, r := range rows {
				if r.name == f.Name && r.def == f.DefValue && r.usage == f.Usage {
					r.forms = append(r.forms, form)
					return
				}
			}
			rows = append(rows, &row{name: f.Name, def: f.DefValue, usage: f.Usage, forms: []string{form}})
		})
	}
	slices.SortStableFunc(rows, func(a, b *row) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	b.WriteString("| flag | default | form | what |\n|---|---|---|---|\n")
	for _, r := range rows {
		def := ""
		if r.def != "" {
			def = "`" + r.def + "`"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", r.name, def, strings.Join(r.forms, ", "), strings.ReplaceAll(r.usage, "|", `\|`))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// lineDiff lists the lines only one of a and b has.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out = append(out, "README:     "+l)
		}
	}
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out = append(out, "flag sets:  "+l)
		}
	}
	return strings.Join(out, "\n")
}
