package raftadapter

import "github.com/hashicorp/raft"

// Stores are the durable parts of a Raft group member. Tests and the
// simulator keep them across a crash-restart to model a disk that survives.
type Stores struct {
	Log      raft.LogStore
	Stable   raft.StableStore
	Snapshot raft.SnapshotStore
	// Close releases files; nil for in-memory stores.
	Close func() error
}

// NewMemStores returns volatile stores (tests, Maelstrom and the simulator,
// which keeps the value to model a disk that survives a crash). The durable
// stores are in core/lockd, so that nothing linking this package pulls in a
// disk store.
func NewMemStores() Stores {
	mem := raft.NewInmemStore()
	return Stores{Log: mem, Stable: mem, Snapshot: newMemSnapshots()}
}
