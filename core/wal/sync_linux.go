//go:build linux

package wal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// maxEINTR bounds retries of a sync interrupted by a signal.
const maxEINTR = 100

// syncData flushes f's data and the metadata needed to read it back (its
// size) but not timestamps: one device flush for an append.
func syncData(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	var syncErr error
	ctlErr := rc.Control(func(fd uintptr) {
		for range maxEINTR {
			if syncErr = syscall.Fdatasync(int(fd)); !errors.Is(syncErr, syscall.EINTR) {
				return
			}
		}
	})
	if ctlErr != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), ctlErr)
	}
	if syncErr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: syncErr}
	}
	return nil
}
