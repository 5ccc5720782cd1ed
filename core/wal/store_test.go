package wal_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstep/lockstep/core/wal"
)

// TestEmpty checks a fresh store reports 0/0 and no entries, before and
// after a reopen.
func TestEmpty(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, dir string) {
		s := b.open(t, dir, false)
		checkView(t, s, nil)
		if err := s.GetLog(1, new(raft.Log)); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("GetLog(1) on empty = %v", err)
		}
		s = b.reopen(t, s, dir, false)
		checkView(t, s, nil)
	})
}

// TestRoundTrip stores entries exercising every raft.Log field and edge
// value, and compares them field by field, live and after a reopen.
func TestRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte{0xAB}, 200<<10)
	base := uint64(1) << 62
	logs := []*raft.Log{
		{Index: base, Term: 1, Type: raft.LogCommand, Data: []byte("cmd")},
		{Index: base + 1, Term: 1, Type: raft.LogNoop},
		{Index: base + 2, Term: 7, Type: raft.LogBarrier, Extensions: []byte("ext")},
		{Index: base + 3, Term: 7, Type: raft.LogConfiguration, Data: big, Extensions: []byte{0}},
		{Index: base + 4, Term: 1<<64 - 1, Type: raft.LogType(255), Data: []byte{0, 0, 0},
			AppendedAt: time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.UTC)},
		{Index: base + 5, Term: 9, AppendedAt: time.Unix(0, -5)},
	}
	forBackends(t, func(t *testing.T, b backend, dir string) {
		logs := cloneLogs(logs)
		s := b.open(t, dir, false)
		mustStore(t, s, logs[:1])
		if err := s.StoreLog(logs[1]); err != nil {
			t.Fatal(err)
		}
		mustStore(t, s, logs[2:])
		// The store must not alias the caller's buffers.
		logs[0].Data[0] = 'X'
		logs[0].Data = []byte("cmd")
		checkView(t, s, logs)
		s = b.reopen(t, s, dir, false)
		checkView(t, s, logs)
	})
}

// cloneLogs deep-copies logs, so a test can modify them once per backend.
func cloneLogs(logs []*raft.Log) []*raft.Log {
	out := make([]*raft.Log, len(logs))
	for i, l := range logs {
		c := *l
		c.Data, c.Extensions = bytes.Clone(l.Data), bytes.Clone(l.Extensions)
		out[i] = &c
	}
	return out
}

// TestStoreRejects feeds batches that would break contiguity or are
// malformed, and checks each is refused without changing the log.
func TestStoreRejects(t *testing.T) {
	cases := []struct {
		name  string
		batch []*raft.Log
		want  error
	}{
		{"gap after last", entries(12, 13, 1), wal.ErrNotContiguous},
		{"before first", entries(3, 6, 1), wal.ErrNotContiguous},
		{"index zero", []*raft.Log{{Index: 0}}, wal.ErrNotContiguous},
		{"hole inside batch", []*raft.Log{entry(11, 1), entry(13, 1)}, wal.ErrNotContiguous},
		{"descending batch", []*raft.Log{entry(11, 1), entry(10, 1)}, wal.ErrNotContiguous},
		{"nil entry", []*raft.Log{entry(11, 1), nil}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forBackends(t, func(t *testing.T, b backend, dir string) {
				s := b.open(t, dir, false)
				mustStore(t, s, entries(1, 10, 1))
				if err := s.DeleteRange(1, 4); err != nil {
					t.Fatal(err)
				}
				err := s.StoreLogs(tc.batch)
				if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
					t.Fatalf("StoreLogs = %v, want %v", err, tc.want)
				}
				checkView(t, s, entries(5, 10, 1))
				s = b.reopen(t, s, dir, false)
				checkView(t, s, entries(5, 10, 1))
			})
		})
	}
}

// TestDeleteRange applies prefix, suffix, whole, out-of-range and invalid
// deletions to 1..10, checks the view live and after a reopen, then checks
// the log still accepts the next append.
func TestDeleteRange(t *testing.T) {
	cases := []struct {
		name     string
		lo, hi   uint64
		wantErr  error
		from, to uint64 // surviving range; from > to means empty
		next     uint64 // index the next append may start at
	}{
		{"prefix", 1, 4, nil, 5, 10, 11},
		{"prefix from below first", 0, 3, nil, 4, 10, 11},
		{"suffix", 7, 10, nil, 1, 6, 7},
		{"suffix past last", 7, 100, nil, 1, 6, 7},
		{"everything", 1, 10, nil, 1, 0, 500},
		{"more than everything", 0, 1 << 63, nil, 1, 0, 3},
		{"outside above", 20, 30, nil, 1, 10, 11},
		{"single last", 10, 10, nil, 1, 9, 10},
		{"middle hole", 3, 5, wal.ErrNotContiguous, 1, 10, 11},
		{"inverted", 5, 3, wal.ErrNotContiguous, 1, 10, 11},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forBackends(t, func(t *testing.T, b backend, dir string) {
				s := b.open(t, dir, false)
				mustStore(t, s, entries(1, 10, 1))
				err := s.DeleteRange(tc.lo, tc.hi)
				if !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
					t.Fatalf("DeleteRange(%d,%d) = %v, want %v", tc.lo, tc.hi, err, tc.wantErr)
				}
				var want []*raft.Log
				if tc.from <= tc.to {
					want = entries(tc.from, tc.to, 1)
				}
				checkView(t, s, want)
				s = b.reopen(t, s, dir, false)
				checkView(t, s, want)

				more := entries(tc.next, tc.next+2, 2)
				mustStore(t, s, more)
				if tc.from > tc.to {
					want = more
				} else {
					want = append(want, more...)
				}
				s = b.reopen(t, s, dir, false)
				checkView(t, s, want)
			})
		})
	}
}

// TestOverwriteSuffix stores a batch starting inside the log (as bolt
// allows) and checks it replaces the old suffix, live and after reopen.
func TestOverwriteSuffix(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, dir string) {
		s := b.open(t, dir, false)
		mustStore(t, s, entries(1, 10, 1))
		mustStore(t, s, entries(6, 8, 2))
		want := append(entries(1, 5, 1), entries(6, 8, 2)...)
		checkView(t, s, want)
		s = b.reopen(t, s, dir, false)
		checkView(t, s, want)
	})
}

// TestClosed checks every method fails with ErrClosed after Close and a
// second Close is harmless.
func TestClosed(t *testing.T) {
	forBackends(t, testClosed)
}

func testClosed(t *testing.T, b backend, dir string) {
	s := b.open(t, dir, false)
	mustStore(t, s, entries(1, 2, 1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, errFirst := s.FirstIndex()
	_, errLast := s.LastIndex()
	_, errGet := s.Get([]byte("k"))
	for name, err := range map[string]error{
		"FirstIndex":  errFirst,
		"LastIndex":   errLast,
		"GetLog":      s.GetLog(1, new(raft.Log)),
		"StoreLogs":   s.StoreLogs(entries(3, 3, 1)),
		"DeleteRange": s.DeleteRange(1, 1),
		"Set":         s.Set([]byte("k"), []byte("v")),
		"Get":         errGet,
	} {
		if !errors.Is(err, wal.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

// TestLocked checks a second Open of a directory in use fails, and
// succeeds once the first store is closed.
func TestLocked(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, wal.Options{})
	if s2, err := wal.Open(dir, wal.Options{Logger: quiet}); !errors.Is(err, wal.ErrLocked) {
		if s2 != nil {
			_ = s2.Close()
		}
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	reopen(t, s, dir, wal.Options{})
}
