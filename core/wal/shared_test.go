package wal_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstep/lockstep/core/wal"
)

// TestSharedConcurrentGroups has 8 groups append 40 batches each at once
// (sync on, run under -race), one trimming its prefix as it goes. Every
// group must end with exactly its own entries, live and after a reopen,
// and the log must have merged records of different groups into shared
// flushes.
func TestSharedConcurrentGroups(t *testing.T) {
	const groups, batches, size = 8, 40, 4
	dir := t.TempDir()
	sh := openShared(t, dir, wal.SharedOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, groups)
	for g := range uint64(groups) {
		view := openGroup(t, sh, g+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range uint64(batches) {
				from := b*size + 1
				if err := view.StoreLogs(entries(from, from+size-1, g+1)); err != nil {
					errs <- fmt.Errorf("group %d: %w", g+1, err)
					return
				}
				if g == 0 && b%10 == 9 {
					if err := view.DeleteRange(0, from); err != nil {
						errs <- fmt.Errorf("group %d delete: %w", g+1, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := sh.Stats()
	if st.Records != groups*batches+batches/10 {
		t.Fatalf("%d records written, want %d", st.Records, groups*batches+batches/10)
	}
	if st.Flushes >= st.Records {
		t.Fatalf("%d flushes for %d records: no group commit", st.Flushes, st.Records)
	}
	t.Logf("%d records in %d flushes", st.Records, st.Flushes)
	want := func(g uint64) []*raft.Log {
		if g == 1 {
			return entries(batches*size-size+2, batches*size, 1)
		}
		return entries(1, batches*size, g)
	}
	check := func(sh *wal.Shared) {
		t.Helper()
		for g := range uint64(groups) {
			v := openGroup(t, sh, g+1)
			checkView(t, v, want(g+1))
			if err := v.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sh.Close(); err != nil {
		t.Fatal(err)
	}
	sh = openShared(t, dir, wal.SharedOptions{})
	check(sh)
}

// TestSharedGroupsIndependent checks one group's conflicts and trims leave
// another's log alone, across a reopen: group 1 trims a prefix, group 2
// has its suffix replaced, group 3 deletes everything and restarts at a
// higher index.
func TestSharedGroupsIndependent(t *testing.T) {
	dir := t.TempDir()
	sh := openShared(t, dir, wal.SharedOptions{})
	g1, g2, g3 := openGroup(t, sh, 1), openGroup(t, sh, 2), openGroup(t, sh, 3)
	for _, g := range []*wal.Group{g1, g2, g3} {
		mustStore(t, g, entries(1, 10, 1))
	}
	if err := g1.DeleteRange(1, 6); err != nil {
		t.Fatal(err)
	}
	if err := g2.DeleteRange(8, 10); err != nil {
		t.Fatal(err)
	}
	mustStore(t, g2, entries(8, 9, 2))
	if err := g3.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	mustStore(t, g3, entries(500, 501, 3))
	want := map[uint64][]*raft.Log{
		1: entries(7, 10, 1),
		2: append(entries(1, 7, 1), entries(8, 9, 2)...),
		3: entries(500, 501, 3),
		4: nil,
	}
	views := map[uint64]*wal.Group{1: g1, 2: g2, 3: g3, 4: openGroup(t, sh, 4)}
	for id, w := range want {
		checkView(t, views[id], w)
	}
	if _, err := sh.Group(1); !errors.Is(err, wal.ErrGroupOpen) {
		t.Fatalf("second view of group 1 = %v, want ErrGroupOpen", err)
	}
	if err := sh.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := g1.LastIndex(); !errors.Is(err, wal.ErrClosed) {
		t.Fatalf("LastIndex after the shared log closed = %v, want ErrClosed", err)
	}
	sh = openShared(t, dir, wal.SharedOptions{})
	for id, w := range want {
		checkView(t, openGroup(t, sh, id), w)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSharedLocked checks a second OpenShared of a directory in use fails.
func TestSharedLocked(t *testing.T) {
	dir := t.TempDir()
	sh := openShared(t, dir, wal.SharedOptions{})
	if sh2, err := wal.OpenShared(dir, wal.SharedOptions{Logger: quiet}); !errors.Is(err, wal.ErrLocked) {
		if sh2 != nil {
			_ = sh2.Close()
		}
		t.Fatalf("second OpenShared = %v, want ErrLocked", err)
	}
	if err := sh.Close(); err != nil {
		t.Fatal(err)
	}
	openShared(t, dir, wal.SharedOptions{})
}

// segmentFiles lists a shared log's segment file names, oldest first.
func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "seg-*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestSharedReclaim writes a hot group that trims its log as raft does
// after snapshots and an idle group that wrote once, in 32 KiB segments.
// The segments must be deleted as they empty (the idle group's entries
// rewritten forward), and both logs must survive a reopen.
func TestSharedReclaim(t *testing.T) {
	dir := t.TempDir()
	opts := wal.SharedOptions{SegmentBytes: 32 << 10}
	sh, hot := hotAndIdle(t, dir, opts, 3)
	const total = 2000
	w := trimmingWriter{g: hot, next: 1, batch: 10, keep: 100}
	w.write(t, total)
	first := w.first
	written := int64(total * 1100)
	// Reclaim runs in the background; Close waits for it.
	if err := sh.Close(); err != nil {
		t.Fatal(err)
	}
	if n := segmentBytes(t, dir); n > written/8 {
		t.Fatalf("%d bytes of segments after writing %d: space not reclaimed (%d files)", n, written, len(segmentFiles(t, dir)))
	}
	sh = openShared(t, dir, opts)
	checkView(t, openGroup(t, sh, 1), bigEntries(first, total, 1))
	checkView(t, openGroup(t, sh, 2), bigEntries(1, 3, 1))
}

// TestSharedResurrectedSegments keeps copies of the first segments, lets
// reclaim delete them, then puts back all but one, as a crash could after
// unsynced deletes: the segments before the gap must be ignored (removed),
// and the ones after it replay to the same logs.
func TestSharedResurrectedSegments(t *testing.T) {
	dir := t.TempDir()
	opts := wal.SharedOptions{SegmentBytes: 16 << 10}
	sh, hot := hotAndIdle(t, dir, opts, 2)
	saved := map[string][]byte{}
	w := trimmingWriter{g: hot, next: 1, batch: 5, keep: 50}
	w.write(t, 100)
	// Only full segments: the active one is still growing.
	full := segmentFiles(t, dir)
	for _, name := range full[:len(full)-1] {
		raw, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) {
			continue // reclaimed meanwhile
		}
		saved[name] = must(raw, err)
	}
	if len(saved) < 4 {
		t.Fatalf("only %d segments to resurrect", len(saved))
	}
	w.write(t, 400)
	if err := sh.Close(); err != nil {
		t.Fatal(err)
	}
	for name := range saved {
		if _, err := os.Stat(name); err == nil {
			t.Fatalf("segment %s was never reclaimed", name)
		}
	}
	keys := slices.Sorted(maps.Keys(saved))
	for i, name := range keys {
		if i != 1 { // the gap
			if err := os.WriteFile(name, saved[name], 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	sh = openShared(t, dir, opts)
	checkView(t, openGroup(t, sh, 1), bigEntries(w.first, w.next-1, 1))
	checkView(t, openGroup(t, sh, 2), bigEntries(1, 2, 1))
	if _, err := os.Stat(keys[0]); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment %s before the gap was kept: %v", keys[0], err)
	}
}

// hotAndIdle opens a shared log in dir whose group 2 (idle) holds entries
// 1..idle and returns it with group 1's view (hot), for a trimmingWriter.
func hotAndIdle(t *testing.T, dir string, opts wal.SharedOptions, idle uint64) (*wal.Shared, *wal.Group) {
	t.Helper()
	sh := openShared(t, dir, opts)
	mustStore(t, openGroup(t, sh, 2), bigEntries(1, idle, 1))
	return sh, openGroup(t, sh, 1)
}

// trimmingWriter appends 1 KiB entries to a group in batches and, past
// keep entries, deletes the prefix as raft does after each snapshot.
type trimmingWriter struct {
	g           *wal.Group
	next, first uint64
	batch, keep uint64
}

// write appends the next n entries.
func (w *trimmingWriter) write(t *testing.T, n uint64) {
	t.Helper()
	if w.first == 0 {
		w.first = 1
	}
	for end := w.next + n; w.next < end; w.next += w.batch {
		mustStore(t, w.g, bigEntries(w.next, w.next+w.batch-1, 1))
		if w.next > w.keep {
			w.first = w.next - w.keep + 1
			if err := w.g.DeleteRange(0, w.first-1); err != nil {
				t.Fatal(err)
			}
		}
	}
}
