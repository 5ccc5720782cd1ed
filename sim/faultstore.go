package sim

// Storage faults for simulated nodes: a log store whose writes a nemesis can
// slow or fail through a failpoint. It lives with the simulator, not with
// the node, so a production lockd never links the failpoint machinery.

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/pingcap/failpoint"
)

// FailpointStoreLogs names the failpoint evaluated before a node's log store
// writes, e.g. "lockstep/n1/logStoreBeforeStoreLogs". Enable it with
// failpoint.Enable(name, "return(200)") for a disk that takes 200 ms per
// write or "return(true)" for a failing fsync. Names carry the node id
// because the simulator runs many nodes in one process.
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

// WithFailpoints wraps s so that faults can be injected into its writes
// through the failpoint called name (see FailpointStoreLogs).
func WithFailpoints(name string, s raft.LogStore) raft.LogStore {
	return &faultyLogStore{LogStore: s, name: name}
}

func (f *faultyLogStore) StoreLog(l *raft.Log) error {
	return f.StoreLogs([]*raft.Log{l})
}

func (f *faultyLogStore) StoreLogs(logs []*raft.Log) error {
	// The delay is slept here rather than with failpoint's own sleep term,
	// which sleeps while holding the failpoint's lock: a concurrent Disable
	// would then block on a mutex, which a synctest bubble cannot wait out.
	if v, err := failpoint.Eval(f.name); err == nil {
		switch v := v.(type) {
		case bool:
			if v {
				return fmt.Errorf("store %d logs: %w", len(logs), ErrDiskFault)
			}
		case int:
			time.Sleep(time.Duration(v) * time.Millisecond)
		}
	}
	return f.LogStore.StoreLogs(logs)
}
