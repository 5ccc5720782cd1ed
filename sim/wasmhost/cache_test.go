package wasmhost

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestPruneKeepsTheMostRecentlyUsed: goal — a cache keeps cacheKeep
// entries, the most recently used, so it stays bounded as sources change.
// Method: six entries used at distinct times, the oldest touched last.
func TestPruneKeepsTheMostRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	for i := range 6 {
		p := filepath.Join(dir, fmt.Sprintf("m-%d.wasm", i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	touch(filepath.Join(dir, "m-0.wasm"))
	prune(dir, "m-*.wasm")
	left, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range left {
		left[i] = filepath.Base(left[i])
	}
	slices.Sort(left)
	if want := []string{"m-0.wasm", "m-3.wasm", "m-4.wasm", "m-5.wasm"}; !slices.Equal(left, want) {
		t.Errorf("kept %v, want %v", left, want)
	}
}
