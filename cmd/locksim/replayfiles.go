package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockstep/lockstep/scenarios"
)

// exitReplayDiffers: locksim -check regenerated a deterministic run and
// the history differs from the saved one (the replay promise is broken).
const exitReplayDiffers = 131

// loadOutcome reads the params.json of a saved run.
func loadOutcome(dir string) (*scenarios.Outcome, error) {
	b, err := os.ReadFile(filepath.Join(dir, "params.json"))
	if err != nil {
		return nil, fmt.Errorf("load outcome: %w", err)
	}
	var o scenarios.Outcome
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("load outcome: %s: %w", dir, err)
	}
	return &o, nil
}

// sameFiles compares two run directories file by file, byte for byte. It
// returns how many files match and the names of those that differ or
// exist on one side only.
func sameFiles(saved, fresh string) (int, []string, error) {
	a, err := readTree(saved)
	if err != nil {
		return 0, nil, err
	}
	b, err := readTree(fresh)
	if err != nil {
		return 0, nil, err
	}
	same := 0
	var diffs []string
	for name, content := range a {
		other, ok := b[name]
		switch {
		case !ok:
			diffs = append(diffs, name+" (not regenerated)")
		case !bytes.Equal(content, other):
			diffs = append(diffs, name)
		default:
			same++
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			diffs = append(diffs, name+" (not saved)")
		}
	}
	slices.Sort(diffs)
	return same, diffs, nil
}

// readTree reads every regular file under dir, keyed by relative path. A
// missing dir is an empty tree: a run whose guest crashed saves nothing, and
// two replays that crash alike are identical.
func readTree(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return files, nil
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files[rel], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read run directory: %w", err)
	}
	return files, nil
}
