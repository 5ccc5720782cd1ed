package wal

import (
	"fmt"
	"os"
	"path/filepath"
)

// syncDir makes renames and file creations in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir for sync: %w", err)
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("close dir %s: %w", dir, err)
	}
	return nil
}

// writeFileAtomic replaces the file at path with data so that a crash at any point
// leaves either the old or the new content: write a temporary file, fsync
// it, rename it over, fsync the directory. noSync skips both fsyncs.
func writeFileAtomic(path string, data []byte, noSync bool) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	_, err = f.Write(data)
	if err == nil && !noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	if noSync {
		return nil
	}
	return syncDir(filepath.Dir(path))
}

// lockDir creates dir if needed and takes its LOCK file (ErrLocked when
// another store holds it).
func lockDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", dir, err)
	}
	lock, err := lockFile(filepath.Join(dir, lockFileName))
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	return lock, nil
}
