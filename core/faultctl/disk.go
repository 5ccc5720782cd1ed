package faultctl

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrDiskFault is what an injected failing fdatasync returns.
var ErrDiskFault = errors.New("injected disk fault: fdatasync failed")

// Disk is a member's log disk under test control, mirroring the
// simulator's log-store failpoint (sim.FailpointStoreLogs): every log
// write of every Raft group of the process waits Delay before its sync,
// and while Fail is set the sync fails. Its BeforeSync is the WAL's seam
// (wal.Options.BeforeSync). Unlike the simulator's store, the WAL stays
// broken after one failed sync (the kernel may have dropped the pages, so
// a retried sync could lie): from then on that group's log refuses every
// write until the process is restarted, and Raft on it acknowledges
// nothing new. Safe for concurrent use.
type Disk struct {
	mu     sync.Mutex
	delay  time.Duration
	fail   bool
	failed int64
}

// DiskState is the disk's fault and how many syncs it has failed since
// the process started (non-zero: some log is broken until a restart).
type DiskState struct {
	DelayNs     int64 `json:"delay_ns"`
	Fail        bool  `json:"fail"`
	FailedSyncs int64 `json:"failed_syncs"`
}

// maxDiskDelay bounds the delay: the simulator draws at most 500 ms.
const maxDiskDelay = 10 * time.Second

// Set replaces the fault: a delay before every sync and/or failing syncs.
// Zero and false make the disk healthy again (a broken log stays broken).
func (d *Disk) Set(delay time.Duration, fail bool) error {
	if delay < 0 || delay > maxDiskDelay {
		return fmt.Errorf("faultctl: disk delay %s must be in [0, %s]", delay, maxDiskDelay)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.delay, d.fail = delay, fail
	return nil
}

// State reports the fault and the failed-sync count.
func (d *Disk) State() DiskState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return DiskState{DelayNs: int64(d.delay), Fail: d.fail, FailedSyncs: d.failed}
}

// BeforeSync runs before every log sync: it sleeps the delay (outside the
// lock, so a change is not held up by it) and then fails if asked.
func (d *Disk) BeforeSync() error {
	d.mu.Lock()
	delay := d.delay
	d.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail {
		d.failed++
		return ErrDiskFault
	}
	return nil
}
