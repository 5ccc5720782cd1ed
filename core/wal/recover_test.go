package wal_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstep/lockstep/core/wal"
)

const logFile = "raft.wal"

// writeTwoBatches stores 1..5 then 6..10 and returns the file sizes after
// each, so tests can damage exactly the second record.
func writeTwoBatches(t *testing.T, dir string) (afterFirst, afterSecond int64) {
	t.Helper()
	s := openStore(t, dir, wal.Options{})
	mustStore(t, s, entries(1, 5, 1))
	afterFirst = fileSize(t, dir)
	mustStore(t, s, entries(6, 10, 1))
	afterSecond = fileSize(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return afterFirst, afterSecond
}

func fileSize(t testing.TB, dir string) int64 {
	t.Helper()
	info, err := os.Stat(filepath.Join(dir, logFile))
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// rewrite applies damage to the log file's bytes.
func rewrite(t *testing.T, dir string, damage func([]byte) []byte) {
	t.Helper()
	path := filepath.Join(dir, logFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, damage(raw), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTornTail damages the last record the ways a crash mid-write can and
// checks Open recovers to the last whole record, cuts the file there, and
// keeps accepting appends that survive another reopen.
func TestTornTail(t *testing.T) {
	cases := []struct {
		name    string
		damage  func(raw []byte, first, second int64) []byte
		lastIdx uint64
	}{
		{"cut inside header", func(raw []byte, first, _ int64) []byte { return raw[:first+4] }, 5},
		{"cut inside payload", func(raw []byte, _, second int64) []byte { return raw[:second-1] }, 5},
		{"cut right after header", func(raw []byte, first, _ int64) []byte { return raw[:first+8] }, 5},
		{"zero-filled last record", func(raw []byte, first, second int64) []byte {
			return append(raw[:first], make([]byte, second-first)...)
		}, 5},
		{"zeros after last record", func(raw []byte, _, _ int64) []byte {
			return append(raw, make([]byte, 4096)...)
		}, 10},
		{"flipped byte in last record", func(raw []byte, _, second int64) []byte {
			raw[second-3] ^= 0x40
			return raw
		}, 5},
		{"last record payload zeroed", func(raw []byte, first, second int64) []byte {
			clear(raw[first+8 : second])
			return raw
		}, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			first, second := writeTwoBatches(t, dir)
			rewrite(t, dir, func(raw []byte) []byte { return tc.damage(raw, first, second) })

			s := openStore(t, dir, wal.Options{})
			checkView(t, s, entries(1, tc.lastIdx, 1))
			wantSize := first
			if tc.lastIdx == 10 {
				wantSize = second
			}
			if got := fileSize(t, dir); got != wantSize {
				t.Fatalf("file size after recovery = %d, want %d", got, wantSize)
			}
			more := entries(tc.lastIdx+1, tc.lastIdx+3, 2)
			mustStore(t, s, more)
			s = reopen(t, s, dir, wal.Options{})
			checkView(t, s, append(entries(1, tc.lastIdx, 1), more...))
		})
	}
}

// TestCorruptBeforeTail damages a record that has data after it and checks
// Open refuses with ErrCorrupt instead of silently dropping durable entries.
func TestCorruptBeforeTail(t *testing.T) {
	cases := []struct {
		name   string
		damage func(raw []byte, first int64)
	}{
		{"flipped payload byte", func(raw []byte, first int64) { raw[first/2] ^= 0x01 }},
		{"flipped checksum byte", func(raw []byte, _ int64) { raw[5] ^= 0x80 }},
		{"length grown within file", func(raw []byte, _ int64) { raw[0]++ }},
		{"length shrunk", func(raw []byte, _ int64) { raw[0]-- }},
		{"length absurd", func(raw []byte, _ int64) { raw[3] = 0xFF }},
		{"header zeroed", func(raw []byte, _ int64) { clear(raw[:8]) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			first, _ := writeTwoBatches(t, dir)
			rewrite(t, dir, func(raw []byte) []byte { tc.damage(raw, first); return raw })
			s, err := wal.Open(dir, wal.Options{Logger: quiet})
			if err == nil {
				_ = s.Close()
			}
			if !errors.Is(err, wal.ErrCorrupt) {
				t.Fatalf("Open = %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestStaleTempFiles leaves the temporary files an interrupted compaction
// or Set would, and checks Open ignores and removes them.
func TestStaleTempFiles(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, wal.Options{})
	mustStore(t, s, entries(1, 3, 1))
	if err := s.SetUint64([]byte("term"), 4); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{logFile + ".tmp", "raft.stable.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, name), bytes.Repeat([]byte{7}, 100), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s = openStore(t, dir, wal.Options{})
	checkView(t, s, entries(1, 3, 1))
	if v, err := s.GetUint64([]byte("term")); err != nil || v != 4 {
		t.Fatalf("GetUint64 = %d, %v; want 4", v, err)
	}
	for _, name := range []string{logFile + ".tmp", "raft.stable.tmp"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s still present: %v", name, err)
		}
	}
}
