//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package wal

import (
	"fmt"
	"os"
)

// lockFile only creates the lock file where flock is unavailable; callers
// there must not open one directory twice.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	return f, nil
}
