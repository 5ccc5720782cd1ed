package main

import (
	"flag"
	"time"

	"github.com/lockstep/lockstep/core/node"
)

// raftArgs are Raft timing and snapshot flags of a member; zero keeps
// core/node's defaults. Failover time is mostly these timeouts (see
// EXPERIMENTS.md, "Failover on real TCP").
type raftArgs struct {
	heartbeat, election, leaderLease, snapshotInterval time.Duration
	snapshotThreshold, trailingLogs                    uint64
}

func (a *raftArgs) register(fs *flag.FlagSet) {
	fs.DurationVar(&a.heartbeat, "heartbeat-timeout", 0, "Raft: a follower without leader contact this long starts an election (0: node default)")
	fs.DurationVar(&a.election, "election-timeout", 0, "Raft: a candidate without a result this long retries (0: node default)")
	fs.DurationVar(&a.leaderLease, "leader-lease-timeout", 0, "Raft: a leader without quorum contact this long steps down (0: node default)")
	fs.DurationVar(&a.snapshotInterval, "snapshot-interval", 0, "Raft: how often to check whether to snapshot (0: node default)")
	fs.Uint64Var(&a.snapshotThreshold, "snapshot-threshold", 0, "Raft: entries since the last snapshot that trigger one (0: node default)")
	fs.Uint64Var(&a.trailingLogs, "trailing-logs", 0, "Raft: entries kept after a snapshot (0: node default)")
}

// tune copies the flags that were given into the node's config.
func (a *raftArgs) tune(c *node.Config) {
	set := func(d *time.Duration, v time.Duration) {
		if v > 0 {
			*d = v
		}
	}
	set(&c.HeartbeatTimeout, a.heartbeat)
	set(&c.ElectionTimeout, a.election)
	set(&c.LeaderLeaseTimeout, a.leaderLease)
	set(&c.SnapshotInterval, a.snapshotInterval)
	if a.snapshotThreshold > 0 {
		c.SnapshotThreshold = a.snapshotThreshold
	}
	if a.trailingLogs > 0 {
		c.TrailingLogs = a.trailingLogs
	}
}
