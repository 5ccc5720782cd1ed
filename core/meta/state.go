// Package meta is lockstep's metadata group (Raft group 0, on every
// member): the number of lock shards, fixed when the cluster is first
// bootstrapped, and the members with the addresses they publish, so that
// nodes, gateways and clients can route a request to its shard's leader.
// The state machine is pure; group.go runs it on Raft.
package meta

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/lockstep/lockstep/core/acl"
)

// ErrShardsFixed refuses a different shard count once one is set:
// resources would move between groups, and their fencing tokens with them.
var ErrShardsFixed = errors.New("the shard count is fixed when the cluster is bootstrapped")

// maxShards bounds the shard count (a member runs one Raft group each).
const maxShards = 256

// Member is one lockstep process as it published itself.
type Member struct {
	ID string `json:"id"`
	// RaftAddr is its member port: Raft and forwarded commands for every group.
	RaftAddr string `json:"raft_addr"`
	// APIAddr is its public HTTP address; empty until it publishes one.
	APIAddr string `json:"api_addr,omitempty"`
}

// State is the metadata. Version grows with every change, so a router can
// tell which of two maps is newer.
type State struct {
	Version uint64   `json:"version"`
	Shards  int      `json:"shards"`
	Members []Member `json:"members"` // sorted by ID
	// ACL holds the tokens and quotas; nil while ACLs are off (acl.go).
	// It is never edited in place, so clones share it.
	ACL *acl.Policy `json:"acl,omitempty"`
}

// Op names a metadata command.
type Op string

const (
	// OpSetShards fixes the shard count (a no-op when it is already that).
	OpSetShards Op = "set-shards"
	// OpPublish records a member's addresses.
	OpPublish Op = "publish"
)

// Command is one metadata log entry.
type Command struct {
	Op     Op     `json:"op"`
	Shards int    `json:"shards,omitempty"`
	Member Member `json:"member,omitzero"`
	ACLCommand
}

// Apply applies cmd; an error means nothing changed.
func (s *State) Apply(cmd Command) error {
	switch cmd.Op {
	case OpSetShards:
		switch {
		case cmd.Shards < 1 || cmd.Shards > maxShards:
			return fmt.Errorf("meta: shard count %d outside 1..%d", cmd.Shards, maxShards)
		case s.Shards == cmd.Shards:
			return nil
		case s.Shards != 0:
			return fmt.Errorf("%w: have %d, asked for %d", ErrShardsFixed, s.Shards, cmd.Shards)
		}
		s.Shards = cmd.Shards
		s.Version++
		return nil
	case OpPublish:
		m := cmd.Member
		if m.ID == "" || m.RaftAddr == "" {
			return fmt.Errorf("meta: a member needs an id and a raft address")
		}
		i, found := slices.BinarySearchFunc(s.Members, m.ID, func(x Member, id string) int { return cmp.Compare(x.ID, id) })
		if found && s.Members[i] == m {
			return nil
		}
		if found {
			s.Members[i] = m
		} else {
			s.Members = slices.Insert(s.Members, i, m)
		}
		s.Version++
		return nil
	}
	return s.applyACL(cmd)
}

// Member returns the member with id.
func (s *State) Member(id string) (Member, bool) {
	i, found := slices.BinarySearchFunc(s.Members, id, func(x Member, id string) int { return cmp.Compare(x.ID, id) })
	if !found {
		return Member{}, false
	}
	return s.Members[i], true
}

// Clone returns a copy that shares nothing with s.
func (s *State) Clone() State {
	c := *s
	c.Members = slices.Clone(s.Members)
	return c
}

// snapshotBody is the snapshot form: the state (members kept sorted) and
// the last entry it holds, so that a replica restored from it knows which
// writes it can answer for (Group.Propose). Snapshots written before the
// index was kept read as index 0.
type snapshotBody struct {
	State
	AppliedIndex uint64 `json:"applied_index,omitempty"`
}

func encode(s State, index uint64) ([]byte, error) {
	b, err := json.Marshal(snapshotBody{State: s, AppliedIndex: index})
	if err != nil {
		return nil, fmt.Errorf("meta: encode snapshot: %w", err)
	}
	return b, nil
}

func decode(b []byte) (State, uint64, error) {
	var body snapshotBody
	if err := json.Unmarshal(b, &body); err != nil {
		return State{}, 0, fmt.Errorf("meta: decode snapshot: %w", err)
	}
	if err := body.State.check(); err != nil {
		return State{}, 0, err
	}
	return body.State, body.AppliedIndex, nil
}

// check reports whether a decoded state is well formed.
func (s *State) check() error {
	if !slices.IsSortedFunc(s.Members, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) }) {
		return errors.New("meta: snapshot members out of order")
	}
	if err := s.ACL.Check(); err != nil {
		return fmt.Errorf("meta: decode snapshot: %w", err)
	}
	return nil
}
