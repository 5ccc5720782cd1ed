package raftlink

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// An idle group keeps quiet. hashicorp/raft's leader sends each follower an
// AppendEntries every CommitTimeout (5 ms in lockstep) whether or not there
// is anything to say, so followers learn the commit index soon after the
// last entry; once they know it, every further one repeats the last. Those
// were most of an idle member's CPU: with 4 shards, each group's leader
// sent 2 followers ~130 a second, every one a write, a read and a wake-up
// on both members. The leader's transport answers such a repeat itself,
// with the follower's last answer, when the follower answered the same
// request (same term, previous entry and commit index) with success and
// answered this group within QuietWithin. Any change — a new entry, a
// commit, a term, a failure, silence — sends the real one, so the group
// wakes on its own traffic and a follower never misses an entry or a
// commit index.
//
// Heartbeats always travel: they are what tells followers the leader lives
// (their election timers) and what tells the leader it still reaches them.
// The leader's lease is therefore as safe while quiet: raft steps down when
// it has not reached a quorum for LeaderLeaseTimeout, a failed heartbeat
// ends the quiet at once, and an answered repeat counts as contact only
// within QuietWithin (100 ms by default: raft heartbeats every 50-100 ms at
// lockstep's 500 ms heartbeat timeout, and its leader lease is 250 ms) of
// a real answer. Grants never depend on it either way: every grant is an
// entry a quorum stored, timed on the leader's clock through the log.

// follower is what one group's leader knows of one follower's answers.
type follower struct {
	mu sync.Mutex
	// last is the last AppendEntries with no entries that the follower
	// answered with success, and resp that answer.
	last  appendKey
	resp  raft.AppendEntriesResponse
	valid bool
	// contact is when the follower last answered this group with success.
	contact time.Time
}

// appendKey is what an AppendEntries without entries tells a follower.
type appendKey struct {
	term, prevIndex, prevTerm, commit uint64
}

func keyOf(req *raft.AppendEntriesRequest) appendKey {
	return appendKey{req.Term, req.PrevLogEntry, req.PrevLogTerm, req.LeaderCommitIndex}
}

func (t *Transport) follower(target raft.ServerAddress) *follower {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.followers == nil {
		t.followers = make(map[raft.ServerAddress]*follower)
	}
	f := t.followers[target]
	if f == nil {
		f = &follower{}
		t.followers[target] = f
	}
	return f
}

// quiet answers req from the follower's last answer when req repeats it,
// reporting whether it did.
func (f *follower) quiet(req *raft.AppendEntriesRequest, now time.Time, within time.Duration, resp *raft.AppendEntriesResponse) bool {
	if within <= 0 || len(req.Entries) > 0 || isHeartbeat(req) {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.valid || f.last != keyOf(req) || now.Sub(f.contact) > within {
		return false
	}
	*resp = f.resp
	return true
}

// answered records the follower's answer to a request that travelled.
func (f *follower) answered(req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, err error, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ok := err == nil && resp.Success && resp.Term == req.Term
	if ok {
		f.contact = now
	}
	if len(req.Entries) > 0 || isHeartbeat(req) {
		// A heartbeat proves contact; entries change what the follower
		// holds, so the repeat to match is the next empty request.
		f.valid = f.valid && ok && len(req.Entries) == 0
		return
	}
	f.valid, f.last, f.resp = ok, keyOf(req), *resp
}

// Quieted counts the AppendEntries this transport answered itself.
func (t *Transport) Quieted() uint64 { return t.quieted.Load() }
