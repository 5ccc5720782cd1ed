package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstep/lockstep/core/wal"
)

// quiet discards the store's recovery and compaction logs in tests.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openStore(t testing.TB, dir string, opts wal.Options) *wal.Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s, err := wal.Open(dir, opts)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func reopen(t testing.TB, s *wal.Store, dir string, opts wal.Options) *wal.Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return openStore(t, dir, opts)
}

// entry builds the canonical entry for index: its Data names the index and
// term, so readers can check what they got without shared state.
func entry(index, term uint64) *raft.Log {
	return &raft.Log{
		Index:      index,
		Term:       term,
		Type:       raft.LogCommand,
		Data:       []byte(fmt.Sprintf("entry-%d-term-%d", index, term)),
		AppendedAt: time.Unix(1_700_000_000, int64(index)),
	}
}

func entries(from, to, term uint64) []*raft.Log {
	out := make([]*raft.Log, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, entry(i, term))
	}
	return out
}

func mustStore(t testing.TB, s raft.LogStore, logs []*raft.Log) {
	t.Helper()
	if err := s.StoreLogs(logs); err != nil {
		t.Fatalf("store logs [%d..]: %v", logs[0].Index, err)
	}
}

func sameLog(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		bytes.Equal(a.Data, b.Data) && bytes.Equal(a.Extensions, b.Extensions) &&
		a.AppendedAt.Equal(b.AppendedAt) && a.AppendedAt.IsZero() == b.AppendedAt.IsZero()
}

// checkView asserts the store holds exactly want (consecutive, maybe empty):
// both index bounds, every entry, and not-found just outside.
func checkView(t testing.TB, s raft.LogStore, want []*raft.Log) {
	t.Helper()
	var first, last uint64
	if len(want) > 0 {
		first, last = want[0].Index, want[len(want)-1].Index
	}
	if got, err := s.FirstIndex(); err != nil || got != first {
		t.Fatalf("FirstIndex = %d, %v; want %d", got, err, first)
	}
	if got, err := s.LastIndex(); err != nil || got != last {
		t.Fatalf("LastIndex = %d, %v; want %d", got, err, last)
	}
	for _, w := range want {
		var got raft.Log
		if err := s.GetLog(w.Index, &got); err != nil {
			t.Fatalf("GetLog(%d): %v", w.Index, err)
		}
		if !sameLog(&got, w) {
			t.Fatalf("GetLog(%d) = %+v, want %+v", w.Index, got, *w)
		}
	}
	for _, idx := range []uint64{first - 1, last + 1} {
		if err := s.GetLog(idx, new(raft.Log)); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("GetLog(%d) outside [%d,%d] = %v, want ErrLogNotFound", idx, first, last, err)
		}
	}
}
