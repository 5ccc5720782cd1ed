package lockd

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstep/lockstep/core/node"
)

// TestWALModeIsFixedByTheData: goal — a member never starts on a data dir
// written in the other WAL mode (its groups would come up with empty logs
// and no term or vote), nor with a shared WAL on bolt or an unknown mode.
// Method: open stores per group, then shared; then shared, then per group.
func TestWALModeIsFixedByTheData(t *testing.T) {
	perGroup := perGroupDir(t)
	if _, err := openSharedWAL(perGroup, WALShared, LogStoreWAL, nil); !errors.Is(err, node.ErrConfig) {
		t.Fatalf("shared on a per-group dir = %v, want ErrConfig", err)
	}

	shared := t.TempDir()
	sh, err := openSharedWAL(shared, WALShared, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	stores, err := openSharedStores(sh, 1, filepath.Join(shared, groupDir(1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(stores.Close(), closeSharedWAL(sh)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(shared, groupDir(1), "wal")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("shared mode made a per-group WAL dir: %v", err)
	}
	if sh, err := openSharedWAL(shared, WALPerGroup, LogStoreWAL, nil); !errors.Is(err, node.ErrConfig) {
		_ = closeSharedWAL(sh)
		t.Fatalf("per-group on a shared dir = %v, want ErrConfig", err)
	}
	for _, tc := range []struct {
		mode WALMode
		kind LogStoreKind
	}{{WALShared, LogStoreBolt}, {"both", LogStoreWAL}} {
		if sh, err := openSharedWAL(t.TempDir(), tc.mode, tc.kind, nil); !errors.Is(err, node.ErrConfig) {
			_ = closeSharedWAL(sh)
			t.Fatalf("mode %q with %q = %v, want ErrConfig", tc.mode, tc.kind, err)
		}
	}
}

// TestWALModeFollowsTheDataDir: goal — without a mode a member keeps the
// one its data dir was written in (a per-group dir from an older default
// opens per-group, not refused), takes shared for a new dir, and per-group
// with the bolt log store. Method: open dirs of each kind with no mode.
func TestWALModeFollowsTheDataDir(t *testing.T) {
	fresh := t.TempDir()
	sh, err := openSharedWAL(fresh, "", LogStoreWAL, nil)
	if err != nil || sh == nil {
		t.Fatalf("new dir: %v %v, want a shared WAL", sh, err)
	}
	if err := closeSharedWAL(sh); err != nil {
		t.Fatal(err)
	}
	if sh, err := openSharedWAL(fresh, "", "", nil); err != nil || sh == nil {
		t.Fatalf("shared dir reopened: %v %v, want the shared WAL", sh, err)
	} else {
		_ = closeSharedWAL(sh)
	}
	perGroup := perGroupDir(t)
	if sh, err := openSharedWAL(perGroup, "", LogStoreWAL, nil); err != nil || sh != nil {
		t.Fatalf("per-group dir: %v %v, want per-group (nil) and no error", sh, err)
	}
	if sh, err := openSharedWAL(t.TempDir(), "", LogStoreBolt, nil); err != nil || sh != nil {
		t.Fatalf("bolt: %v %v, want per-group", sh, err)
	}
}

// perGroupDir is a data dir written by a member with a WAL per group.
func perGroupDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := OpenDiskStores(filepath.Join(dir, groupDir(1)), LogStoreWAL, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}
