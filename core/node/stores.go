package node

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// OpenDiskStores opens the durable stores in dir: a bolt log and stable
// store (fsync on every write batch) behind a small log cache, and a file
// snapshot store keeping two snapshots.
func OpenDiskStores(dir string, logs io.Writer) (Stores, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Stores{}, fmt.Errorf("create data dir: %w", err)
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true},
	})
	if err != nil {
		return Stores{}, fmt.Errorf("open raft log: %w", err)
	}
	cache, err := raft.NewLogCache(1024, bolt)
	if err != nil {
		_ = bolt.Close()
		return Stores{}, fmt.Errorf("log cache: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, logs)
	if err != nil {
		_ = bolt.Close()
		return Stores{}, fmt.Errorf("open snapshots: %w", err)
	}
	return Stores{Log: cache, Stable: bolt, Snapshot: snaps, Close: bolt.Close}, nil
}

// NewMemStores returns volatile stores (tests and the simulator, which keep
// the value to model a disk that survives a crash).
func NewMemStores() Stores {
	mem := raft.NewInmemStore()
	return Stores{Log: mem, Stable: mem, Snapshot: raft.NewInmemSnapshotStore()}
}

// NewTCPTransport listens for Raft traffic on bind.
func NewTCPTransport(bind string, logs io.Writer) (raft.Transport, error) {
	addr, err := net.ResolveTCPAddr("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raft address %q: %w", bind, err)
	}
	t, err := raft.NewTCPTransport(bind, addr, 4, 5*time.Second, logs)
	if err != nil {
		return nil, fmt.Errorf("raft transport on %s: %w", bind, err)
	}
	return t, nil
}

func newHCLogger(id string, w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "raft-" + id, Output: w, Level: hclog.Warn})
}
