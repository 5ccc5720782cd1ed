package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Goal: a replay compares what the runs saved, including nothing: two runs
// whose guest crashed alike saved no directory and are identical, while a
// directory on one side only is a difference.
func TestSameFilesMissingDirectories(t *testing.T) {
	root := t.TempDir()
	a, b, c := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	if same, diffs, err := sameFiles(a, b); err != nil || same != 0 || len(diffs) != 0 {
		t.Fatalf("both missing: same %d diffs %v err %v, want identical", same, diffs, err)
	}
	if err := os.MkdirAll(c, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c, "history.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, diffs, err := sameFiles(c, a); err != nil || len(diffs) != 1 || diffs[0] != "history.json (not regenerated)" {
		t.Fatalf("saved only: diffs %v err %v", diffs, err)
	}
	if _, diffs, err := sameFiles(a, c); err != nil || len(diffs) != 1 || diffs[0] != "history.json (not saved)" {
		t.Fatalf("regenerated only: diffs %v err %v", diffs, err)
	}
}
