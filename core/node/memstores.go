package node

import "github.com/hashicorp/raft"

// NewMemStores returns volatile stores (tests, Maelstrom and the simulator,
// which keeps the value to model a disk that survives a crash). The durable
// stores are in core/lockd, so that nothing linking this package pulls in a
// disk store.
func NewMemStores() Stores {
	mem := raft.NewInmemStore()
	return Stores{Log: mem, Stable: mem, Snapshot: newMemSnapshots()}
}
