package wal_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstep/lockstep/core/wal"
)

// bigEntries is entries with 1 KiB of data each, so file sizes are
// dominated by data and easy to reason about.
func bigEntries(from, to, term uint64) []*raft.Log {
	out := entries(from, to, term)
	for _, l := range out {
		l.Data = append(l.Data, bytes.Repeat([]byte{byte(l.Index)}, 1024)...)
	}
	return out
}

// TestCompaction deletes most of a log, checks the file was rewritten to
// roughly the live size with the same view, appends, and reopens.
func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	opts := wal.Options{CompactMinDeadBytes: 64 << 10}
	s := openStore(t, dir, opts)
	all := bigEntries(1, 1000, 1)
	for i := 0; i < len(all); i += 16 {
		mustStore(t, s, all[i:min(i+16, len(all))])
	}
	before := fileSize(t, dir)

	// Dead data below the threshold must not trigger a rewrite.
	if err := s.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, dir); got <= before {
		t.Fatalf("small delete rewrote the file: %d -> %d bytes", before, got)
	}

	if err := s.DeleteRange(1, 900); err != nil {
		t.Fatal(err)
	}
	after := fileSize(t, dir)
	if after > before/8 {
		t.Fatalf("file %d bytes after dropping 90%% of %d bytes; no compaction", after, before)
	}
	checkView(t, s, all[900:])
	more := bigEntries(1001, 1016, 2)
	mustStore(t, s, more)
	want := append(all[900:], more...)
	checkView(t, s, want)
	s = reopen(t, s, dir, opts)
	checkView(t, s, want)
	if _, err := os.Stat(filepath.Join(dir, logFile+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}

// TestCompactionToEmpty deletes the whole log, which compacts to an empty
// file, and checks the log restarts at an arbitrary index after reopen.
func TestCompactionToEmpty(t *testing.T) {
	dir := t.TempDir()
	opts := wal.Options{CompactMinDeadBytes: 1}
	s := openStore(t, dir, opts)
	mustStore(t, s, bigEntries(1, 50, 1))
	if err := s.DeleteRange(1, 50); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, dir); got != 0 {
		t.Fatalf("file %d bytes after deleting everything, want 0", got)
	}
	s = reopen(t, s, dir, opts)
	checkView(t, s, nil)
	mustStore(t, s, bigEntries(700, 702, 3))
	s = reopen(t, s, dir, opts)
	checkView(t, s, bigEntries(700, 702, 3))
}
