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
func OpenDiskStores(dir string, kind LogStoreKind, logs io.Writer, beforeSync func() error) (node.Stores, error) {
	switch kind {
	case LogStoreBolt:
		if beforeSync != nil {
			return node.Stores{}, fmt.Errorf("%w: disk faults need the wal log store", node.ErrConfig)
		}
		return openBoltStores(dir, logs)
	case LogStoreWAL, "":
		return openWALStores(dir, logs, beforeSync)
	default:
		return node.Stores{}, fmt.Errorf("%w: unknown log store %q (want wal or bolt)", node.ErrConfig, kind)
	}
}

func openWALStores(dir string, logs io.Writer, beforeSync func() error) (node.Stores, error) {
	st, err := wal.Open(filepath.Join(dir, "wal"), wal.Options{BeforeSync: beforeSync})
	if err != nil {
		return node.Stores{}, fmt.Errorf("open raft log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, logs)
	if err != nil {
		_ = st.Close()
		return node.Stores{}, fmt.Errorf("open snapshots: %w", err)
	}
	return node.Stores{Log: st, Stable: st, Snapshot: snaps, Close: st.Close}, nil
}

func openBoltStores(dir string, logs io.Writer) (node.Stores, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return node.Stores{}, fmt.Errorf("create data dir: %w", err)
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true},
	})
	if err != nil {
		return node.Stores{}, fmt.Errorf("open raft log: %w", err)
	}
	cache, err := raft.NewLogCache(1024, bolt)
	if err != nil {
		_ = bolt.Close()
		return node.Stores{}, fmt.Errorf("log cache: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, logs)
	if err != nil {
		_ = bolt.Close()
		return node.Stores{}, fmt.Errorf("open snapshots: %w", err)
	}
	return node.Stores{Log: cache, Stable: bolt, Snapshot: snaps, Close: bolt.Close}, nil
}
