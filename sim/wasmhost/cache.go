package wasmhost

import (
	"os"
	"path/filepath"
	"slices"
	"time"
)

// cacheKeep is how many module versions a cache keeps: every source change
// makes a new module (~25 MB) and its machine code (~85 MB), so the caches
// would otherwise grow with every edit.
const cacheKeep = 4

// touch marks a cache entry as just used.
func touch(path string) {
	now := time.Now()
	_ = os.Chtimes(path, now, now)
}

// prune removes all but the cacheKeep most recently used entries of dir
// matching pattern. Errors are ignored: a cache that keeps too much is
// harmless, and another process may be pruning too.
func prune(dir, pattern string) {
	entries, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(entries) <= cacheKeep {
		return
	}
	used := map[string]time.Time{}
	for _, e := range entries {
		if info, err := os.Stat(e); err == nil {
			used[e] = info.ModTime()
		}
	}
	slices.SortFunc(entries, func(a, b string) int { return used[b].Compare(used[a]) })
	for _, e := range entries[cacheKeep:] {
		_ = os.RemoveAll(e)
	}
}
