package lockd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/raftadapter"
	"github.com/lockstep/lockstep/core/wal"
)

// Durable stores live here, in the process assembly, and not in core/node:
// the simulator links core/node, and must not link bbolt or the WAL.

// LogStoreKind selects the durable Raft log implementation.
type LogStoreKind string

const (
	// LogStoreWAL is lockstep's append-only log: one fdatasync per batch.
	LogStoreWAL LogStoreKind = "wal"
	// LogStoreBolt is raft-boltdb/v2 (bbolt): two fsyncs per batch.
	LogStoreBolt LogStoreKind = "bolt"
)

// OpenDiskStores opens the durable stores in dir with the chosen log store
// and a file snapshot store keeping two snapshots. Both log stores fsync
// every write batch before Raft acknowledges it. beforeSync, when set, is
// the WAL's fault seam (wal.Options.BeforeSync; test builds only).
func OpenDiskStores(dir string, kind LogStoreKind, logs io.Writer, beforeSync func() error) (raftadapter.Stores, error) {
	switch kind {
	case LogStoreBolt:
		if beforeSync != nil {
			return raftadapter.Stores{}, fmt.Errorf("%w: disk faults need the wal log store", node.ErrConfig)
		}
		return openBoltStores(dir, logs)
	case LogStoreWAL, "":
		return openWALStores(dir, logs, beforeSync)
	default:
		return raftadapter.Stores{}, fmt.Errorf("%w: unknown log store %q (want wal or bolt)", node.ErrConfig, kind)
	}
}

func openWALStores(dir string, logs io.Writer, beforeSync func() error) (raftadapter.Stores, error) {
	st, err := wal.Open(filepath.Join(dir, "wal"), wal.Options{BeforeSync: beforeSync})
	if err != nil {
		return raftadapter.Stores{}, fmt.Errorf("open raft log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, logs)
	if err != nil {
		_ = st.Close()
		return raftadapter.Stores{}, fmt.Errorf("open snapshots: %w", err)
	}
	return raftadapter.Stores{Log: st, Stable: st, Snapshot: snaps, Close: st.Close}, nil
}

func openBoltStores(dir string, logs io.Writer) (raftadapter.Stores, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return raftadapter.Stores{}, fmt.Errorf("create data dir: %w", err)
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true},
	})
	if err != nil {
		return raftadapter.Stores{}, fmt.Errorf("open raft log: %w", err)
	}
	cache, err := raft.NewLogCache(1024, bolt)
	if err != nil {
		_ = bolt.Close()
		return raftadapter.Stores{}, fmt.Errorf("log cache: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, logs)
	if err != nil {
		_ = bolt.Close()
		return raftadapter.Stores{}, fmt.Errorf("open snapshots: %w", err)
	}
	return raftadapter.Stores{Log: cache, Stable: bolt, Snapshot: snaps, Close: bolt.Close}, nil
}

// WALMode says how a member's Raft groups share the WAL.
type WALMode string

const (
	// WALPerGroup gives every group its own WAL directory and fdatasyncs.
	WALPerGroup WALMode = "per-group"
	// WALShared puts every group of the member in one wal.Shared log,
	// whose flushes carry the records of all groups writing at the time.
	WALShared WALMode = "shared"
)

// sharedWALDir holds a member's shared WAL, next to the group directories
// (which then hold only snapshots).
const sharedWALDir = "wal-shared"

// openSharedWAL opens the member's shared WAL in shared mode and returns
// nil in per-group mode. Without a mode it takes the one the data
// directory was written in, and shared for a new directory (with the WAL
// log store): with several groups, their flushes then share fdatasyncs
// (EXPERIMENTS.md, "Benchmarks"). It refuses a data directory written in
// the other mode: the groups' logs and terms would silently start empty.
func openSharedWAL(dataDir string, mode WALMode, kind LogStoreKind, beforeSync func() error) (*wal.Shared, error) {
	dir := filepath.Join(dataDir, sharedWALDir)
	perGroup, err := filepath.Glob(filepath.Join(dataDir, "*", "wal", "raft.wal"))
	if err != nil {
		return nil, fmt.Errorf("look for per-group logs: %w", err)
	}
	if mode == "" {
		mode = WALShared
		if len(perGroup) > 0 || (kind != LogStoreWAL && kind != "") {
			mode = WALPerGroup
		}
	}
	switch mode {
	case WALPerGroup:
		if _, err := os.Stat(dir); err == nil {
			return nil, fmt.Errorf("%w: %s holds a shared WAL; start with --wal-mode shared", node.ErrConfig, dir)
		}
		return nil, nil
	case WALShared:
		if kind != LogStoreWAL && kind != "" {
			return nil, fmt.Errorf("%w: --wal-mode shared needs --log-store wal, not %q", node.ErrConfig, kind)
		}
		if len(perGroup) > 0 {
			return nil, fmt.Errorf("%w: %s is a per-group WAL; start with --wal-mode per-group", node.ErrConfig, perGroup[0])
		}
		sh, err := wal.OpenShared(dir, wal.SharedOptions{BeforeSync: beforeSync})
		if err != nil {
			return nil, fmt.Errorf("open shared raft log: %w", err)
		}
		return sh, nil
	default:
		return nil, fmt.Errorf("%w: unknown WAL mode %q (want per-group or shared)", node.ErrConfig, mode)
	}
}

// openSharedStores opens group g's view of the shared WAL and a file
// snapshot store in dir.
func openSharedStores(sh *wal.Shared, g uint64, dir string, logs io.Writer) (raftadapter.Stores, error) {
	view, err := sh.Group(g)
	if err != nil {
		return raftadapter.Stores{}, fmt.Errorf("open raft log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, logs)
	if err != nil {
		_ = view.Close()
		return raftadapter.Stores{}, fmt.Errorf("open snapshots: %w", err)
	}
	return raftadapter.Stores{Log: view, Stable: view, Snapshot: snaps, Close: view.Close}, nil
}

// closeSharedWAL closes sh, if the member has one.
func closeSharedWAL(sh *wal.Shared) error {
	if sh == nil {
		return nil
	}
	return sh.Close()
}
