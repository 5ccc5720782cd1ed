package node

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
	"github.com/pingcap/failpoint"
)

// FailpointStoreLogs names the failpoint evaluated before a node's log store
// writes, e.g. "lockstep/n1/logStoreBeforeStoreLogs". Enable it with
// failpoint.Enable(name, "sleep(200)") for a slow disk or "return(true)" for
// a failing fsync. Names carry the node id because the simulator runs many
// nodes in one process.
func FailpointStoreLogs(id string) string {
	return "lockstep/" + id + "/logStoreBeforeStoreLogs"
}

// ErrDiskFault is what a failing injected fsync returns.
var ErrDiskFault = errors.New("injected disk fault")

// faultyLogStore wraps a LogStore with the failpoint above. With the
// failpoint disabled, Eval returns an error and the write proceeds.
type faultyLogStore struct {
	raft.LogStore
	name string
}

// WithFailpoints wraps s so that faults can be injected into node id's writes.
func WithFailpoints(id string, s raft.LogStore) raft.LogStore {
	return &faultyLogStore{LogStore: s, name: FailpointStoreLogs(id)}
}

func (f *faultyLogStore) StoreLog(l *raft.Log) error {
	return f.StoreLogs([]*raft.Log{l})
}

func (f *faultyLogStore) StoreLogs(logs []*raft.Log) error {
	// Eval runs a "sleep(ms)" term itself, and returns the value of a
	// "return(v)" term.
	if v, err := failpoint.Eval(f.name); err == nil {
		if fail, ok := v.(bool); ok && fail {
			return fmt.Errorf("store %d logs: %w", len(logs), ErrDiskFault)
		}
	}
	return f.LogStore.StoreLogs(logs)
}
