package wal

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"
)

// TestWriteFailureIsSticky makes the log file unwritable under the store
// and checks the failing write and every later one are refused (a failed
// fsync cannot be retried safely) while reads still work, and that a
// reopen recovers the synced entries.
func TestWriteFailureIsSticky(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLog(&raft.Log{Index: 1, Term: 1, Data: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	_ = s.f.Close() // the next write fails with "file already closed"
	if err := s.StoreLog(&raft.Log{Index: 2, Term: 1}); err == nil {
		t.Fatal("write to a closed file succeeded")
	}
	if err := s.DeleteRange(1, 1); err == nil || !errors.Is(err, s.broken) {
		t.Fatalf("DeleteRange after failure = %v, want the sticky error", err)
	}
	var got raft.Log
	if err := s.GetLog(1, &got); err != nil || string(got.Data) != "a" {
		t.Fatalf("GetLog(1) = %v %q", err, got.Data)
	}
	if last, _ := s.LastIndex(); last != 1 {
		t.Fatalf("LastIndex = %d after failed write, want 1", last)
	}
	_ = s.Close()

	s, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if first, last := s.log.firstIndex(), s.log.lastIndex(); first != 1 || last != 1 {
		t.Fatalf("after reopen log is [%d,%d], want [1,1]", first, last)
	}
}
