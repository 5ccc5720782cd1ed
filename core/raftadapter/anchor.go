package raftadapter

import "github.com/hashicorp/raft"

// AppendEntries sends args; when the follower rejects it and its log ends
// inside args' entries, the request is sent once more anchored at the
// follower's last entry.
//
// hashicorp/raft v1.7.2's leader only ever lowers a follower's next index
// after a rejection (to min(next-1, follower's last+1)). When the answer
// to an accepted AppendEntries is lost, the leader resends from its old
// next index; if the follower has meanwhile snapshotted and compacted its
// log past that index, it rejects every resend, the leader walks below its
// own log start and sends its own snapshot, older than the follower's
// state. Restored, it rewound the follower over a log with a hole, and
// raft panicked "log not found" applying the next commit (simulator,
// networkPartition seed 20; core/node's FSM now refuses such a snapshot, see
// refuseRewind). Anchoring is sound by Raft's log matching: if the
// follower's last entry has the leader's term at that index, the two logs
// agree up to it, so once the rest is appended the follower holds every
// entry of args and raft may count args as accepted.
func (t groupTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if err := t.Transport.AppendEntries(id, target, args, resp); err != nil || resp.Success {
		return err
	}
	anchored, ok := anchorAtFollowerEnd(args, resp)
	if !ok {
		return nil
	}
	var out raft.AppendEntriesResponse
	if err := t.Transport.AppendEntries(id, target, anchored, &out); err != nil || !out.Success {
		return nil // the first rejection stands
	}
	*resp = out
	return nil
}

// anchorAtFollowerEnd returns args re-anchored at the entry the rejecting
// follower ends with, when args carries that entry and the rejection was
// not for a newer term.
func anchorAtFollowerEnd(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (*raft.AppendEntriesRequest, bool) {
	if resp.Term != args.Term || resp.LastLog <= args.PrevLogEntry {
		return nil, false
	}
	for i, e := range args.Entries {
		if e.Index == resp.LastLog {
			a := *args
			a.PrevLogEntry, a.PrevLogTerm = e.Index, e.Term
			a.Entries = args.Entries[i+1:]
			return &a, true
		}
	}
	return nil, false
}
