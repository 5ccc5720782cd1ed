package node

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
)

// ErrTransferPending: an earlier leadership transfer to the same member in
// this term failed, and raft may still hold its request (see transfers).
var ErrTransferPending = errors.New("an earlier transfer to this member may still be pending")

// transfers remembers, per target member, the term in which a leadership
// transfer to it failed. hashicorp/raft (v1.7.2) asks the follower's
// replication goroutine to catch the target up through a one-slot channel
// and, on timeout, leaves that request in the slot. The goroutine drains it
// only after its current RPC or retry backoff, which can last seconds (an
// InstallSnapshot, or the uncapped backoff after the member was down). A
// second transfer to the same member then blocks on the full slot without
// watching its timeout, and the leader refuses every new entry
// (ErrLeadershipTransferInProgress) until the slot drains: the whole group
// stalls. If leadership ends first, the slot is never drained and the
// transfer goroutine is blocked for good. A new term has new replication
// state, so a failure only bars the same target for the rest of its term.
type transfers struct {
	mu     sync.Mutex
	failed map[string]uint64
}

func (t *transfers) barred(id string, term uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	failedIn, ok := t.failed[id]
	return ok && failedIn == term
}

func (t *transfers) fail(id string, term uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed == nil {
		t.failed = make(map[string]uint64)
	}
	t.failed[id] = term
}

// CanTransferTo reports whether TransferLeadership to member id may start:
// false after a failed transfer to it in the current term.
func (n *Node) CanTransferTo(id string) bool {
	return !n.transfers.barred(id, n.raft.CurrentTerm())
}

// TransferLeadership asks this leader to hand the group to peer (leader
// spreading across a member's groups). It returns once the transfer ends,
// or ErrTransferPending at once when CanTransferTo(peer.ID) is false.
func (n *Node) TransferLeadership(peer Peer) error {
	term := n.raft.CurrentTerm()
	if n.transfers.barred(peer.ID, term) {
		return fmt.Errorf("transfer leadership to %s: %w", peer.ID, ErrTransferPending)
	}
	f := n.raft.LeadershipTransferToServer(raft.ServerID(peer.ID), raft.ServerAddress(peer.RaftAddr))
	if err := f.Error(); err != nil {
		// Any failure may have left a request behind (a timeout surely
		// did); barring the target for the term costs only spreading.
		n.transfers.fail(peer.ID, term)
		return fmt.Errorf("transfer leadership to %s: %w", peer.ID, err)
	}
	return nil
}
