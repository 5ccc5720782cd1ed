package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Mutant is one semantic mutant: a unified diff against the repository plus
// the header lines that describe it.
type Mutant struct {
	Name        string `json:"name"`
	Concern     string `json:"concern"`
	Description string `json:"description"`
	// Path is the patch file, relative to the repository root.
	Path string `json:"patch"`
	// Files are the repository paths the patch changes.
	Files []string `json:"files"`
	body  []byte
}

// parseMutant reads the header ("Mutant:", "Concern:", "Description:" lines
// before the first "diff --git") and the files the diff touches. git apply
// ignores text before the first diff header, so the header needs no escaping.
func parseMutant(path string, b []byte) (Mutant, error) {
	m := Mutant{Path: path, body: b}
	inDiff := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "diff --git ") {
			inDiff = true
			continue
		}
		if !inDiff {
			key, val, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			val = strings.TrimSpace(val)
			switch strings.TrimSpace(key) {
			case "Mutant":
				m.Name = val
			case "Concern":
				m.Concern = val
			case "Description":
				m.Description = val
			}
			continue
		}
		if f, ok := strings.CutPrefix(line, "+++ b/"); ok {
			m.Files = append(m.Files, f)
		}
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case m.Name == "" || m.Concern == "" || m.Description == "":
		return m, fmt.Errorf("%s: header needs Mutant:, Concern: and Description: lines", path)
	case len(m.Files) == 0:
		return m, fmt.Errorf("%s: no diff (want +++ b/<path> lines)", path)
	case strings.TrimSuffix(filepath.Base(path), ".patch") != m.Name:
		return m, fmt.Errorf("%s: file name does not match Mutant: %s", path, m.Name)
	}
	for _, f := range m.Files {
		if filepath.IsAbs(f) || strings.Contains(f, "..") || !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			return m, fmt.Errorf("%s: %s: a mutant changes non-test .go files inside the repository only", path, f)
		}
	}
	return m, nil
}

// loadMutants reads every *.patch of dir, sorted by name.
func loadMutants(root, dir string, only map[string]bool) ([]Mutant, error) {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.patch"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []Mutant
	seen := map[string]bool{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, p)
		m, err := parseMutant(rel, b)
		if err != nil {
			return nil, err
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("mutant %s defined twice", m.Name)
		}
		seen[m.Name] = true
		if len(only) == 0 || only[m.Name] {
			out = append(out, m)
		}
	}
	for name := range only {
		if !seen[name] {
			return nil, fmt.Errorf("-only: no mutant %q in %s", name, dir)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no mutants (*.patch) in %s", dir)
	}
	return out, nil
}

// stage applies m in scratch, a fresh directory: it copies the files the
// patch touches there, runs git apply on them, and writes an overlay file
// that makes the go command read the patched copies in place of the
// repository's. The repository itself is never written, so runs can go in
// parallel and beside other work on the tree.
func stage(ctx context.Context, root, scratch string, m Mutant) (overlay string, err error) {
	replace := map[string]string{}
	for _, f := range m.Files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", fmt.Errorf("mutant %s: %w", m.Name, err)
		}
		dst := filepath.Join(scratch, "src", f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, src, 0o644); err != nil {
			return "", err
		}
		replace[filepath.Join(root, f)] = dst
	}
	patch := filepath.Join(scratch, "mutant.patch")
	if err := os.WriteFile(patch, m.body, 0o644); err != nil {
		return "", err
	}
	// Outside a repository git apply works like patch(1) on the work dir.
	cmd := exec.CommandContext(ctx, "git", "apply", "--whitespace=nowarn", patch)
	cmd.Dir = filepath.Join(scratch, "src")
	// Never let git find a repository above scratch (a TMPDIR inside a
	// checkout would make it apply relative to that repository's root).
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(scratch))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("mutant %s does not apply to the current tree (refresh %s): %v\n%s", m.Name, m.Path, err, out)
	}
	for orig, dst := range replace {
		a, _ := os.ReadFile(orig)
		b, _ := os.ReadFile(dst)
		if bytes.Equal(a, b) {
			return "", fmt.Errorf("mutant %s: applying left %s unchanged", m.Name, orig)
		}
	}
	b, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", err
	}
	overlay = filepath.Join(scratch, "overlay.json")
	return overlay, os.WriteFile(overlay, b, 0o644)
}
