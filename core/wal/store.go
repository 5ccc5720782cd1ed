// Package wal is a durable raft.LogStore and raft.StableStore that costs one
// fdatasync per write batch.
//
// The log is one append-only file of checksummed records; every StoreLogs
// batch is a single record written with one write and one fdatasync, and
// every DeleteRange appends a small marker record. The live entries are also
// kept in memory (raft keeps at most TrailingLogs plus a snapshot interval
// of them), so GetLog never reads the disk. When deleted entries dominate
// the file it is rewritten with only the live ones. Raft's term and vote
// live in a separate small file rewritten atomically on each Set.
//
// Files in the directory: raft.wal (log), raft.stable (stable store), LOCK,
// and transient *.tmp files removed on Open.
package wal

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/raft"
)

const (
	logFileName  = "raft.wal"
	lockFileName = "LOCK"
	tmpSuffix    = ".tmp"

	defaultCompactMinDeadBytes = 8 << 20
)

var (
	_ raft.LogStore          = (*Store)(nil)
	_ raft.StableStore       = (*Store)(nil)
	_ raft.MonotonicLogStore = (*Store)(nil)
	_ io.Closer              = (*Store)(nil)
)

// Options tunes a Store. The zero value is durable and production-ready.
type Options struct {
	// NoSync skips every fsync and fdatasync. For tests and benchmarks
	// only: a machine crash may lose acknowledged writes.
	NoSync bool
	// CompactMinDeadBytes is how much deleted data the log file must hold,
	// on top of outweighing the live data, before it is rewritten. Zero
	// means 8 MiB.
	CompactMinDeadBytes int64
	// Logger receives recovery and compaction events; nil means
	// slog.Default().
	Logger *slog.Logger
	// BeforeSync, when set, runs before every fdatasync of the log file;
	// an error takes the place of the sync's and breaks the store as a
	// failed fdatasync does. It is the seam test builds inject slow and
	// failing disks through (core/faultctl.Disk); nil in production.
	BeforeSync func() error
}

// Store is a raft log and stable store in one directory. It is safe for
// concurrent use: GetLog and the index getters never wait for a disk sync.
type Store struct {
	dir    string
	opts   Options
	logger *slog.Logger
	lock   *os.File
	stable *stableStore

	// compactMu is held for a whole compaction so only one runs and Close
	// can wait for it. Lock order: compactMu, writeMu, mu.
	compactMu sync.Mutex

	// writeMu serialises writers (StoreLogs, DeleteRange, compaction's
	// file swap, Close) and guards the fields below. Writers read the
	// memLog under writeMu alone; they mutate it under writeMu and mu.
	writeMu sync.Mutex
	f       *os.File
	size    int64
	// broken is set once a write or sync fails: the file tail is then
	// unknown, so every later write fails until a reopen recovers it.
	broken error

	// mu guards log and closed for readers; it is never held across I/O.
	mu     sync.Mutex
	log    memLog
	closed bool
}

// Open opens or creates the store in dir, replaying the log: a torn final
// record is truncated away (and logged); any other damage is ErrCorrupt.
// Only one Store may have dir open at a time (ErrLocked).
func Open(dir string, opts Options) (*Store, error) {
	if opts.CompactMinDeadBytes <= 0 {
		opts.CompactMinDeadBytes = defaultCompactMinDeadBytes
	}
	logger := cmp.Or(opts.Logger, slog.Default())
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, opts: opts, logger: logger, lock: lock}
	if s.stable, err = openStable(filepath.Join(dir, stableFileName), opts.NoSync); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("wal: open stable store: %w", err)
	}
	if err := s.openLog(); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("wal: open log: %w", err)
	}
	return s, nil
}

// Close releases the files and the directory lock. It waits for a running
// compaction. Every later call fails with ErrClosed.
func (s *Store) Close() error {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.log = memLog{}
	s.mu.Unlock()
	s.stable.close()
	if err := errors.Join(s.f.Close(), s.lock.Close()); err != nil {
		return fmt.Errorf("wal: close: %w", err)
	}
	return nil
}

// IsMonotonic tells raft the log never has gaps, so after installing a
// snapshot raft empties the log instead of leaving a gap before new entries.
func (s *Store) IsMonotonic() bool { return true }

// FirstIndex returns the first live index, 0 when the log is empty.
func (s *Store) FirstIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	return s.log.firstIndex(), nil
}

// LastIndex returns the last live index, 0 when the log is empty.
func (s *Store) LastIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	return s.log.lastIndex(), nil
}

// GetLog copies the entry at index into out, or returns raft.ErrLogNotFound.
// out.Data and out.Extensions share the store's memory and must not be
// modified (raft's own stores behave the same).
func (s *Store) GetLog(index uint64, out *raft.Log) error {
	if out == nil {
		return errors.New("wal: GetLog into nil log")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	e, ok := s.log.get(index)
	s.mu.Unlock()
	if !ok {
		return raft.ErrLogNotFound
	}
	*out = e
	return nil
}

// StoreLog stores one entry; see StoreLogs.
func (s *Store) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

// StoreLogs durably appends a batch of consecutive entries with one write
// and one fdatasync. The batch must start right after the last entry, or
// inside the live range to replace its suffix, or anywhere when the log is
// empty; anything else is ErrNotContiguous. The batch is atomic on recovery.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	// Encode before taking the lock: only the checks, the write and the
	// sync need to be serialised.
	batch, frame, err := encodeBatch(logs, headerBytes, maxRecordBytes)
	if err != nil {
		return err
	}
	seal(frame)

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	if err := s.log.checkAppend(batch); err != nil {
		return fmt.Errorf("wal: store logs: %w", err)
	}
	if err := s.appendFrame(frame); err != nil {
		return err
	}
	s.mu.Lock()
	s.log.append(batch, 0)
	s.mu.Unlock()
	return nil
}

// DeleteRange removes entries lo..hi inclusive. Raft drops a prefix after a
// snapshot and a conflicting suffix on a follower; the part of the range
// outside the live log is ignored, and a hole in the middle is
// ErrNotContiguous. The deletion is durable (a synced marker record) before
// it returns. It may then rewrite the file to reclaim space, on this
// goroutine, holding up writers only for the final swap.
func (s *Store) DeleteRange(lo, hi uint64) error {
	s.writeMu.Lock()
	if err := s.writable(); err != nil {
		s.writeMu.Unlock()
		return err
	}
	plan, err := s.log.planDelete(lo, hi)
	if err != nil || plan.noop {
		s.writeMu.Unlock()
		if err != nil {
			return fmt.Errorf("wal: delete range: %w", err)
		}
		return nil
	}
	frame := make([]byte, headerBytes+deletePayloadBytes)
	putDelete(frame[headerBytes:], lo, hi)
	seal(frame)
	if err := s.appendFrame(frame); err != nil {
		s.writeMu.Unlock()
		return err
	}
	s.mu.Lock()
	s.log.delete(plan)
	s.mu.Unlock()
	compact := s.shouldCompact()
	s.writeMu.Unlock()

	if compact {
		s.compact()
	}
	return nil
}

// writable reports why the log cannot take writes. Callers hold writeMu.
func (s *Store) writable() error {
	if s.closed {
		return ErrClosed
	}
	if s.broken != nil {
		return fmt.Errorf("wal: log unusable after earlier failure: %w", s.broken)
	}
	return nil
}

// appendFrame writes frame at the end of the log and syncs it. Callers hold
// writeMu. A failure breaks the store: the kernel may have dropped the
// dirty pages, so retrying the sync could falsely report success.
func (s *Store) appendFrame(frame []byte) error {
	n, err := s.f.Write(frame)
	s.size += int64(n)
	if err == nil && s.opts.BeforeSync != nil {
		err = s.opts.BeforeSync()
	}
	if err == nil && !s.opts.NoSync {
		err = syncData(s.f)
	}
	if err != nil {
		s.broken = err
		return fmt.Errorf("wal: append: %w", err)
	}
	return nil
}

// Set durably stores key = val in the stable store.
func (s *Store) Set(key, val []byte) error {
	if err := s.stable.set(key, val); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	return nil
}

// Get returns a copy of key's value, or ErrKeyNotFound (unwrapped, as raft
// compares its text).
func (s *Store) Get(key []byte) ([]byte, error) {
	return s.stable.get(key)
}

// SetUint64 stores val as 8 big-endian bytes.
func (s *Store) SetUint64(key []byte, val uint64) error { return setUint64(s.Set, key, val) }

// GetUint64 returns key's value stored by SetUint64, or ErrKeyNotFound.
func (s *Store) GetUint64(key []byte) (uint64, error) { return getUint64(s.Get, key) }
