package wal

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// openLog opens the log file and rebuilds the memLog from it, truncating a
// torn tail. It runs inside Open, before the Store is shared.
func (s *Store) openLog() error {
	path := filepath.Join(s.dir, logFileName)
	// A leftover temporary file is a compaction that never reached its
	// rename; the original file is still complete.
	if err := os.Remove(path + tmpSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale %s: %w", path+tmpSuffix, err)
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if err := s.replay(f, created); err != nil {
		_ = f.Close()
		return err
	}
	s.f = f
	return nil
}

func (s *Store) replay(f *os.File, created bool) error {
	if created && !s.opts.NoSync {
		if err := syncDir(s.dir); err != nil {
			return err
		}
	}
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	size := info.Size()
	valid, tornWhy, err := scanRecords(f, size, func(p []byte) error {
		rec, err := decodePayload(p)
		if err != nil {
			return err
		}
		return s.log.applyRecord(rec, 0, false)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	if err := s.log.verify(); err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	if valid < size {
		s.logger.Warn("wal: truncating torn tail of log",
			"path", f.Name(), "offset", valid, "dropped_bytes", size-valid, "reason", tornWhy)
		if err := f.Truncate(valid); err != nil {
			return fmt.Errorf("truncate torn tail of %s: %w", f.Name(), err)
		}
		// Make the cut durable before appending, so a later crash cannot
		// resurrect the torn bytes after new records.
		if !s.opts.NoSync {
			if err := f.Sync(); err != nil {
				return fmt.Errorf("sync truncated %s: %w", f.Name(), err)
			}
		}
	}
	if _, err := f.Seek(valid, io.SeekStart); err != nil {
		return fmt.Errorf("seek %s: %w", f.Name(), err)
	}
	s.size = valid
	return nil
}

// applyRecord replays one record, written to segment seg, with the same
// checks the write path made before writing it. A shared log may have
// reclaimed the segments holding a group's older records, so its replay
// (fromShared) sees only a suffix of the group's log: an append starting
// before that suffix then starts the log afresh, as the entries it kept
// below it are in the reclaimed segments, hence dead.
func (m *memLog) applyRecord(rec record, seg uint32, fromShared bool) error {
	var err error
	switch rec.kind {
	case kindEntries:
		if fromShared && !m.empty() && rec.entries[0].Index < m.first {
			m.reset()
		}
		if err = m.checkAppend(rec.entries); err == nil {
			m.append(rec.entries, seg)
		}
	case kindReset:
		if !fromShared {
			return fmt.Errorf("rewrite record in a single-group log: %w", ErrCorrupt)
		}
		m.reset()
		if err = m.checkAppend(rec.entries); err == nil {
			m.append(rec.entries, seg)
		}
	case kindDelete:
		var plan deletePlan
		if plan, err = m.planDelete(rec.lo, rec.hi); err == nil {
			m.delete(plan)
		}
	default:
		return fmt.Errorf("unknown record kind %d: %w", rec.kind, ErrCorrupt)
	}
	if err != nil {
		return fmt.Errorf("replay: %w: %w", ErrCorrupt, err)
	}
	return nil
}
