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
	perGroup := t.TempDir()
	st, err := OpenDiskStores(filepath.Join(perGroup, groupDir(1)), LogStoreWAL, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
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
