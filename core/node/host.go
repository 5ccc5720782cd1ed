package node

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

// A node process holds the callers of the acquires it proposes; queued ones
// wait there for their grant. When the process dies those callers are gone,
// and a grant made to them would hold the lock for a whole TTL with nobody
// to tell. Four things keep that from happening:
//
//   - every acquire carries the process (node id, random incarnation), and a
//     process announces itself with OpHello when it starts, which cancels
//     the queued requests of its node's earlier processes;
//   - the leader stamps each entry with the members it has not reached for
//     Config.UnreachableAfter, and a queued request held by one of them is
//     cancelled instead of granted;
//   - a restarted process that applies a grant made to a request its node
//     held, in an entry its earlier process never stored (so never applied
//     nor delivered; the same index holding an entry of another term does
//     not count, see raftadapter.StoredLog), proposes OpOrphan for its earlier
//     process's attempts; the grant is released once no attempt of the
//     request is left (a retry elsewhere may still tell its caller) and
//     unless the client claimed it meanwhile (by retrying or renewing);
//   - a live process whose caller left without a definite answer (its
//     acquire's outcome was unknown, or its cancel did not apply) cancels
//     the attempt once it applies, as a caller hanging up would
//     (abandoned.go).
//
// What remains: a grant made in the UnreachableAfter window after a node
// died, to a request it held, lasts its TTL unless that node restarts with
// its disk; a grant its process stored before dying lasts its TTL even
// then (the process may have delivered it; nothing durable says whether);
// and so does a direct grant (the lock was free) whose answer was lost: it
// is the client's, to learn by retrying under its request id.

// newIncarnation draws the process's incarnation from the node's id source
// (seeded in the simulator), never zero.
func newIncarnation(ids func() lock.LeaseID) uint64 {
	for {
		id := ids()
		if v := binary.LittleEndian.Uint64(id[:8]); v != 0 {
			return v
		}
	}
}

// releaseQueueLen bounds the releases waiting to be proposed; more are
// dropped (logged) and their grants expire by TTL as before.
const releaseQueueLen = 1024

// releaseTries bounds the proposals of one release (each waits up to
// NoLeaderAfter for a leader): a release is safe to repeat, and one lost
// while the group elects a leader would leave the lock held for a TTL.
const releaseTries = 10

// announce proposes OpHello until it applies or the node shuts down.
func (n *Node) announce() {
	defer n.wg.Done()
	if n.bug(BugOrphanWaiters) {
		return
	}
	cmd := lock.Command{Op: lock.OpHello, Host: n.cfg.ID, Incarnation: n.incarnation}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ProposeTimeout)
		_, err := n.propose(ctx, cmd)
		cancel()
		if err == nil {
			n.cfg.Logger.Debug("process announced", "node", n.cfg.ID, "incarnation", n.incarnation)
			return
		}
		select {
		case <-n.done:
			return
		case <-time.After(n.cfg.TickInterval):
		}
	}
}

// noticeOrphans looks at the events of one applied entry for grants that
// no process will deliver: made to a request this node held, in an entry
// its earlier process never stored. It runs on the apply path, so it only
// queues.
func (n *Node) noticeOrphans(index, term uint64, events []lock.Event) {
	if n.bug(BugOrphanWaiters) {
		return
	}
	for _, ev := range events {
		if ev.Kind != lock.EventGrant || !ev.Queued || !slices.Contains(ev.Hosts, n.cfg.ID) || n.stored.Holds(index, term) {
			continue
		}
		n.queueRelease(lock.Command{Op: lock.OpOrphan, Resource: ev.Resource, LeaseID: ev.Lease.ID,
			Host: n.cfg.ID, Incarnation: n.incarnation})
	}
}

// noticeRestoredOrphans does what noticeOrphans does for the grants a
// restored snapshot holds: this process applied none of the entries the
// snapshot covers, so it judges each unclaimed grant to its node's earlier
// processes by the entry that made it. One whose entry is not known (an
// older snapshot) counts as stored: it may have been delivered.
func (n *Node) noticeRestoredOrphans(st *lock.State) {
	if n.bug(BugOrphanWaiters) {
		return
	}
	st.UnclaimedOf(n.cfg.ID, n.incarnation, func(resource string, id lock.LeaseID, index, term uint64) {
		if index == 0 || n.stored.Holds(index, term) {
			return
		}
		n.queueRelease(lock.Command{Op: lock.OpOrphan, Resource: resource, LeaseID: id, Host: n.cfg.ID, Incarnation: n.incarnation})
	})
}

// queueRelease hands cmd (an orphan release or a cancel for a caller that
// left) to sendReleases without blocking.
func (n *Node) queueRelease(cmd lock.Command) {
	select {
	case n.releases <- cmd:
	default:
		n.cfg.Logger.Warn("release not proposed: queue full", "op", cmd.Op, "resource", cmd.Resource, "lease_id", cmd.LeaseID)
	}
}

// sendReleases proposes each queued release until it applies.
func (n *Node) sendReleases() {
	defer n.wg.Done()
	for {
		select {
		case <-n.done:
			return
		case cmd := <-n.releases:
			var err error
			for try := 0; try < releaseTries; try++ {
				ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ProposeTimeout)
				_, err = n.propose(ctx, cmd)
				cancel()
				if err == nil || errors.Is(err, ErrShutdown) {
					break
				}
			}
			n.cfg.Logger.Info("grant nobody here can deliver given up", "op", cmd.Op, "resource", cmd.Resource,
				"lease_id", cmd.LeaseID, "err", err)
		}
	}
}
