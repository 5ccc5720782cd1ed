package node

import (
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// contacts is the leader's view of which members it cannot reach, built
// from hashicorp/raft's heartbeat observations: a member is failing from its
// first failed heartbeat until one succeeds again. The view feeds GET
// /cluster and the suspect list the leader stamps on entries, so that a
// queued request whose node is gone is cancelled instead of granted.
type contacts struct {
	self raft.ServerID

	mu sync.Mutex
	// failing maps a member to the last time the leader heard from it, for
	// members whose heartbeats currently fail.
	failing map[raft.ServerID]time.Time
	// leaderSince is when this node last became leader: a member it has
	// never reached counts as unreachable from then, not from year one.
	leaderSince time.Time
	// leader is the leader observed last ("" while none is known);
	// changes counts the observations of a leader other than that.
	leader  raft.ServerID
	changes uint64
	// watches are called at the first observation of a leader other than
	// the one each expects (forwards in flight to it: leaderWatch).
	watches   map[uint64]leaderWatch
	nextWatch uint64
}

// leaderWatch is a call waiting for the group to leave leader expect.
type leaderWatch struct {
	expect raft.ServerID
	call   func()
}

func newContacts(self raft.ServerID) *contacts {
	return &contacts{self: self, failing: make(map[raft.ServerID]time.Time)}
}

// observe updates the view from one raft observation.
func (c *contacts) observe(o raft.Observation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch d := o.Data.(type) {
	case raft.LeaderObservation:
		clear(c.failing)
		if d.LeaderID != "" && d.LeaderID != c.leader {
			c.changes++
		}
		for id, w := range c.watches {
			if w.expect != d.LeaderID {
				w.call()
				delete(c.watches, id)
			}
		}
		c.leader = d.LeaderID
		if d.LeaderID == c.self {
			c.leaderSince = time.Now()
		}
	case raft.FailedHeartbeatObservation:
		last := d.LastContact
		if last.Before(c.leaderSince) {
			last = c.leaderSince
		}
		c.failing[d.PeerID] = last
	case raft.ResumedHeartbeatObservation:
		delete(c.failing, d.PeerID)
	}
}

// onLeaderLeft calls call (once, from the observer; it must not block) when
// a leader other than expect is observed, including none (an election
// started); stop unregisters it. An observation of expect itself, perhaps
// late, does not count.
func (c *contacts) onLeaderLeft(expect raft.ServerID, call func()) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watches == nil {
		c.watches = make(map[uint64]leaderWatch)
	}
	id := c.nextWatch
	c.nextWatch++
	c.watches[id] = leaderWatch{expect: expect, call: call}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.watches, id)
	}
}

// leading reports whether the last leader observed is this node.
func (c *contacts) leading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader == c.self
}

// leaderChanges is how many new leaders this node has observed.
func (c *contacts) leaderChanges() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changes
}

// lastContact reports how long ago the leader last reached id, and whether
// id is currently failing; a member that is not failing was reached within
// the last heartbeat interval.
func (c *contacts) lastContact(id raft.ServerID, now time.Time) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.failing[id]
	if !ok {
		return 0, false
	}
	return now.Sub(last), true
}

// suspects lists the members unreachable for longer than after, sorted.
func (c *contacts) suspects(now time.Time, after time.Duration) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for id, last := range c.failing {
		if now.Sub(last) > after {
			out = append(out, string(id))
		}
	}
	slices.Sort(out)
	return out
}

// watchContacts feeds raft's heartbeat and leader observations into
// n.contacts until the node shuts down. The observer blocks raft's
// heartbeat goroutine while the channel is full, which never lasts: this
// loop only updates a map.
func (n *Node) watchContacts() {
	ch := make(chan raft.Observation, 64)
	obs := raft.NewObserver(ch, true, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(obs)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.raft.DeregisterObserver(obs)
		for {
			select {
			case <-n.done:
				return
			case o := <-ch:
				n.contacts.observe(o)
			}
		}
	}()
}

// MemberState is one member as this node sees it.
type MemberState struct {
	Peer
	// Role is leader, follower, candidate, shutdown, unknown or unreachable.
	Role string
	// SinceContact is how long ago the leader last reached the member; set
	// only on the leader, for members whose heartbeats fail.
	SinceContact time.Duration
	// ContactKnown says SinceContact is meaningful (this node leads).
	ContactKnown bool
}

// Members reports every configured member. On the leader a member whose
// heartbeats have failed for longer than Config.UnreachableAfter is
// "unreachable", however raft would label it; elsewhere roles are what this
// node can tell (its own state, the leader it follows, others "unknown").
func (n *Node) Members() []MemberState {
	_, leaderID := n.raft.LeaderWithID()
	self := n.raft.State()
	now := time.Now()
	out := make([]MemberState, 0, len(n.cfg.Peers))
	for _, p := range n.cfg.Peers {
		m := MemberState{Peer: p, Role: "unknown"}
		switch {
		case raft.ServerID(p.ID) == raft.ServerID(n.cfg.ID):
			m.Role = roleName(self)
		case raft.ServerID(p.ID) == leaderID:
			m.Role = "leader"
		}
		if self == raft.Leader && p.ID != n.cfg.ID {
			m.ContactKnown = true
			m.Role = "follower"
			if since, failing := n.contacts.lastContact(raft.ServerID(p.ID), now); failing {
				m.SinceContact = since
				if since > n.cfg.UnreachableAfter {
					m.Role = "unreachable"
				}
			}
		}
		out = append(out, m)
	}
	return out
}

func roleName(s raft.RaftState) string {
	switch s {
	case raft.Leader:
		return "leader"
	case raft.Follower:
		return "follower"
	case raft.Candidate:
		return "candidate"
	case raft.Shutdown:
		return "shutdown"
	}
	return "unknown"
}
