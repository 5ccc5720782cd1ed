package wal

import "errors"

var (
	// ErrCorrupt marks on-disk state that fails verification somewhere other
	// than a torn tail: a bad checksum followed by more data, an undecodable
	// record, or a replay that breaks index contiguity.
	ErrCorrupt = errors.New("wal: corrupt")

	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("wal: store closed")

	// ErrNotContiguous rejects a write that would leave a gap or a hole in
	// the log: the store is a raft.MonotonicLogStore, so raft never asks for
	// one.
	ErrNotContiguous = errors.New("wal: log indexes not contiguous")

	// ErrTooLarge rejects a batch whose record would exceed maxRecordBytes.
	ErrTooLarge = errors.New("wal: record too large")

	// ErrKeyNotFound is returned by Get and GetUint64 for a missing key. Its
	// text is exactly "not found" because raft compares err.Error() with that
	// string to tell a fresh node from a failing store.
	ErrKeyNotFound = errors.New("not found")
)

// ErrLocked is returned by Open when another open Store holds the directory.
var ErrLocked = errors.New("wal: directory locked by another store")
