package realnet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/lockstep/lockstep/core/faultctl"
)

// Disk faults. A test lockd serves its log disk's fault on the fault
// control listener (faultctl.Disk, through the WAL's BeforeSync seam):
// a delay before every log sync of every group on the member, or failing
// syncs, as the simulator's per-node log-store failpoint does. One thing
// differs: the WAL stays broken after a failed sync (a retried fdatasync
// could report pages the kernel dropped as written), so that member's Raft
// acknowledges nothing new (a follower answers every append with failure,
// a leader steps down at its first failed write) until it restarts. When
// the nemesis heals a failing disk, the member is therefore restarted
// (kill -9, same data dir) if its log broke: the disk was replaced, and the
// member recovers what it had synced.

// diskTimeout bounds one disk-control call. A paused member answers only
// once resumed.
const diskTimeout = 2 * time.Second

// SetDiskFault implements nemesis.Cluster. The fault stays with the slot
// across restarts until healed (as the simulator's failpoint stays with
// the node id).
func (c *Cluster) SetDiskFault(id string, delay time.Duration, fail bool) {
	m := c.byID[id]
	if m == nil {
		return
	}
	ch := faultctl.DiskChange{DelayNs: int64(delay), Fail: fail}
	c.mu.Lock()
	prev := m.disk
	m.disk = ch
	p := m.proc
	c.mu.Unlock()
	if p == nil || (prev == ch && ch == faultctl.DiskChange{}) {
		return
	}
	st, err := c.postDisk(m, ch)
	if err != nil {
		slog.Info("realnet: disk change not delivered", "node", id, "err", err)
	}
	if !prev.Fail || fail {
		return
	}
	// Healing a failing disk: a broken log (or one we cannot ask about,
	// the member paused) needs the restart.
	if err == nil && st.FailedSyncs == 0 {
		return
	}
	c.mu.Lock()
	c.failedSyncs[id] += st.FailedSyncs
	c.mu.Unlock()
	slog.Info("realnet: restarting a member whose log broke on a failing disk", "node", id)
	if err := c.Crash(id); err != nil {
		slog.Warn("realnet: crash", "node", id, "err", err)
	}
	if err := c.Restart(id); err != nil {
		slog.Warn("realnet: restart", "node", id, "err", err)
	}
}

// reapplyDisk gives a restarted process p its slot's disk fault, once its
// control listener is up (writes made before that ran on a healthy disk).
func (c *Cluster) reapplyDisk(m *member, p *process, ch faultctl.DiskChange) {
	for range 100 {
		c.mu.Lock()
		current, same := m.disk, m.proc == p
		c.mu.Unlock()
		if !same || current != ch || p.exited() {
			return
		}
		if _, err := c.postDisk(m, ch); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	slog.Warn("realnet: disk fault not re-applied after restart", "node", m.id)
}

// postDisk sends ch to m's disk control and returns the disk's state.
func (c *Cluster) postDisk(m *member, ch faultctl.DiskChange) (faultctl.DiskState, error) {
	var st faultctl.DiskState
	b, err := json.Marshal(ch)
	if err != nil {
		return st, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), diskTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+m.control+faultctl.DiskPath, bytes.NewReader(b))
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("disk control: status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("disk control: %w", err)
	}
	return st, nil
}
