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
	valid, tornWhy, err := scanRecords(f, size, s.log.applyRecord)
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

// applyRecord replays one record with the same checks the write path made
// before writing it.
func (m *memLog) applyRecord(rec record) error {
	switch rec.kind {
	case kindEntries:
		if err := m.checkAppend(rec.entries); err != nil {
			return err
		}
		m.append(rec.entries)
		return nil
	case kindDelete:
		plan, err := m.planDelete(rec.lo, rec.hi)
		if err != nil {
			return err
		}
		m.delete(plan)
		return nil
	default:
		return fmt.Errorf("unknown record kind %d: %w", rec.kind, ErrCorrupt)
	}
}
