package node

import (
	"sync"

	"github.com/lockstep/lockstep/core/lock"
)

// notifier wakes callers blocked on this node when the entries they wait for
// are applied here. A queued acquire waits for the grant of its own lease id
// (exactly one wake-up per grant: no thundering herd); a throughput-mode
// acquire waits for its resource to be freed and then races.
type notifier struct {
	mu sync.Mutex
	// grants holds, per lease id, the callers waiting for its grant: the
	// original request and any retry of it that reached this node.
	grants map[lock.LeaseID]map[chan lock.Event]struct{}
	// resourceOf is the resource each lease id in grants waits on.
	resourceOf map[lock.LeaseID]string
	// many holds, per multi request lease id, the callers waiting for all
	// of its grant (or cancel) events of one entry (many.go).
	many map[lock.LeaseID]map[chan []lock.Event]struct{}
	// manyResources are the resources of each multi request in many.
	manyResources map[lock.LeaseID][]string
	freed         map[string]map[chan struct{}]struct{}
	onWake        func(resource string, index uint64, lease lock.LeaseID, woken int)
}

func newNotifier(onWake func(string, uint64, lock.LeaseID, int)) *notifier {
	return &notifier{
		grants:        make(map[lock.LeaseID]map[chan lock.Event]struct{}),
		resourceOf:    make(map[lock.LeaseID]string),
		many:          make(map[lock.LeaseID]map[chan []lock.Event]struct{}),
		manyResources: make(map[lock.LeaseID][]string),
		freed:         make(map[string]map[chan struct{}]struct{}),
		onWake:        onWake,
	}
}

// waitGrant registers interest in the grant (or cancellation) of id, queued
// on resource. The channel has room for one event, so delivery never blocks
// apply.
func (n *notifier) waitGrant(id lock.LeaseID, resource string) (<-chan lock.Event, func()) {
	ch := make(chan lock.Event, 1)
	n.mu.Lock()
	set := n.grants[id]
	if set == nil {
		set = make(map[chan lock.Event]struct{})
		n.grants[id] = set
		n.resourceOf[id] = resource
	}
	set[ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.grants[id], ch)
		if len(n.grants[id]) == 0 {
			delete(n.grants, id)
			delete(n.resourceOf, id)
		}
		n.mu.Unlock()
	}
}

// waitFreed registers interest in resource becoming free.
func (n *notifier) waitFreed(resource string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	set := n.freed[resource]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		n.freed[resource] = set
	}
	set[ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.freed[resource], ch)
		if len(n.freed[resource]) == 0 {
			delete(n.freed, resource)
		}
		n.mu.Unlock()
	}
}

func (n *notifier) deliver(index uint64, events []lock.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deliverMany(index, events)
	for _, ev := range events {
		woken := 0
		switch ev.Kind {
		case lock.EventGrant, lock.EventCancel:
			if !ev.Queued && ev.Kind == lock.EventGrant {
				continue // the proposer learns of a direct grant from its result
			}
			// Attempts of one request count as one woken request.
			for ch := range n.grants[ev.Lease.ID] {
				ch <- ev
				woken = 1
			}
			delete(n.grants, ev.Lease.ID)
			delete(n.resourceOf, ev.Lease.ID)
		case lock.EventFreed:
			for ch := range n.freed[ev.Resource] {
				select {
				case ch <- struct{}{}:
				default:
				}
				woken++
			}
			delete(n.freed, ev.Resource)
		default:
			continue
		}
		if n.onWake != nil && woken > 0 {
			lease := ev.Lease.ID
			if ev.Kind == lock.EventFreed {
				lease = lock.LeaseID{}
			}
			n.onWake(ev.Resource, index, lease, woken)
		}
	}
}

// restored wakes the callers whose wait a snapshot ended: a node that
// catches up by installing a snapshot applies none of the entries it
// covers, so their grants and frees raise no events here. A request the
// snapshot shows holding is woken with its grant (else its caller would
// wait out its whole wait while the lock is held for it); every freed-lock
// waiter races again (a spurious wake costs a try). A request that ended
// otherwise is left to its caller's deadline, whose cancel learns how it
// ended. status reads the restored state.
func (n *notifier) restored(status func(resource string) lock.Status, logTime int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.restoredMany(status, logTime)
	for id, set := range n.grants {
		resource := n.resourceOf[id]
		for _, h := range status(resource).Holders {
			if h.ID != id {
				continue
			}
			ev := lock.Event{Kind: lock.EventGrant, Resource: resource, Lease: h, Queued: true, LogTime: logTime}
			for ch := range set {
				ch <- ev
			}
			delete(n.grants, id)
			delete(n.resourceOf, id)
		}
	}
	for resource, set := range n.freed {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		delete(n.freed, resource)
	}
}
