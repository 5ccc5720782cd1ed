package wal

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/raft"
)

// compactChunkBytes bounds one record of a rewritten log.
const compactChunkBytes = 1 << 20

// shouldCompact reports whether deleted data outweighs live data by enough
// to rewrite the file. Callers hold writeMu.
func (s *Store) shouldCompact() bool {
	dead := s.size - s.log.liveBytes
	return dead > s.log.liveBytes && dead > s.opts.CompactMinDeadBytes
}

// compact rewrites the log with only the live entries. The bulk of the new
// file is written and synced without writeMu, so StoreLogs keeps going;
// under writeMu it then appends the records written meanwhile (replay
// applies them to the state they were written against, which the copied
// entries reproduce), renames the file over the log and syncs the dir.
// A crash before the rename leaves the old file (the .tmp is removed on
// Open); after it, the new file holds the same log.
//
// The deletion that triggered it is already durable, so a failure here is
// logged, not returned: the log is correct, just not smaller.
func (s *Store) compact() {
	if !s.compactMu.TryLock() {
		return // another compaction is already running
	}
	defer s.compactMu.Unlock()

	s.writeMu.Lock()
	if s.writable() != nil || !s.shouldCompact() {
		s.writeMu.Unlock()
		return
	}
	// Entries are immutable once stored; copying the structs detaches the
	// slice from later deletes, which clear dropped slots.
	live := slices.Clone(s.log.entries)
	copiedUpTo, sizeBefore := s.size, s.size
	s.writeMu.Unlock()

	path := filepath.Join(s.dir, logFileName)
	tmp, written, err := s.writeLive(path+tmpSuffix, live)
	if err != nil {
		s.logger.Warn("wal: log compaction failed", "path", path, "err", err)
		return
	}

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.finishCompaction(path, tmp, written, copiedUpTo); err != nil {
		s.logger.Warn("wal: log compaction failed", "path", path, "err", err)
		return
	}
	s.logger.Info("wal: compacted log", "path", path, "bytes_before", sizeBefore,
		"bytes_after", s.size, "live_entries", len(live))
}

// writeLive writes entries as records into a new file at tmpPath and syncs
// it. On error the file is removed.
func (s *Store) writeLive(tmpPath string, entries []raft.Log) (*os.File, int64, error) {
	f, err := os.OpenFile(tmpPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("create %s: %w", tmpPath, err)
	}
	w := bufio.NewWriterSize(f, compactChunkBytes)
	var written int64
	for len(entries) > 0 {
		n, payloadLen := chunk(entries)
		frame := make([]byte, headerBytes+payloadLen)
		putEntries(frame[headerBytes:], entries[:n])
		seal(frame)
		if _, err = w.Write(frame); err != nil {
			break
		}
		written += int64(len(frame))
		entries = entries[n:]
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil && !s.opts.NoSync {
		err = f.Sync()
	}
	if err != nil {
		discard(f)
		return nil, 0, fmt.Errorf("write %s: %w", tmpPath, err)
	}
	return f, written, nil
}

// chunk returns how many leading entries fit one record of at most
// compactChunkBytes (at least one) and that record's payload size.
func chunk(entries []raft.Log) (n, payloadLen int) {
	payloadLen = entriesHeadBytes
	for n < len(entries) {
		b := entryBytes(&entries[n])
		if n > 0 && payloadLen+b > compactChunkBytes {
			break
		}
		payloadLen += b
		n++
	}
	return n, payloadLen
}

// finishCompaction copies the records appended since copiedUpTo onto tmp,
// syncs it and swaps it in. Callers hold writeMu.
func (s *Store) finishCompaction(path string, tmp *os.File, written, copiedUpTo int64) error {
	if err := s.writable(); err != nil {
		discard(tmp)
		return err
	}
	tail, err := io.Copy(tmp, io.NewSectionReader(s.f, copiedUpTo, s.size-copiedUpTo))
	if err == nil && !s.opts.NoSync {
		err = tmp.Sync()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		discard(tmp)
		return fmt.Errorf("finish %s: %w", tmp.Name(), err)
	}
	// The name now points at the new file: from here on appends must go to
	// it whatever else fails.
	old := s.f
	s.f, s.size = tmp, written+tail
	if err := old.Close(); err != nil {
		s.logger.Warn("wal: close replaced log file", "err", err)
	}
	if s.opts.NoSync {
		return nil
	}
	if err := syncDir(s.dir); err != nil {
		s.broken = err
		return err
	}
	return nil
}

// discard closes and removes an unfinished temporary file.
func discard(f *os.File) {
	_ = f.Close()
	_ = os.Remove(f.Name())
}
