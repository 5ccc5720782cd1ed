//go:build !linux

package wal

import "os"

// syncData falls back to a full fsync where fdatasync is not available.
func syncData(f *os.File) error { return f.Sync() }
