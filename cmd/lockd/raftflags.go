package main

import (
	"errors"
	"flag"
	"time"

	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/node"
)

// raftArgs are Raft timing and snapshot flags of a member; zero keeps
// core/node's defaults. Failover time is mostly these timeouts (see
// EXPERIMENTS.md, "Failover on real TCP").
type raftArgs struct {
	heartbeat, election, leaderLease, snapshotInterval time.Duration
	snapshotThreshold, trailingLogs                    uint64
}

// commitPathArgs are the Raft batching and replication knobs issue 16
// measured one at a time (EXPERIMENTS.md, "Commit-path levers").
type commitPathArgs struct {
	maxAppendEntries, logCache, proposeDepth int
	commitTimeout                            time.Duration
	noBatchApply                             bool
	walMode                                  string
}

func (a *commitPathArgs) register(fs *flag.FlagSet) {
	fs.IntVar(&a.maxAppendEntries, "max-append-entries", 0, "Raft: most entries per AppendEntries and per leader log write, 1..1024 (0: node default 512)")
	fs.DurationVar(&a.commitTimeout, "commit-timeout", 0, "Raft: idle time before the leader re-sends AppendEntries to carry the commit index (0: node default 5ms)")
	fs.BoolVar(&a.noBatchApply, "no-batch-apply", false, "Raft: turn off BatchApplyCh (proposals then reach the leader loop one by one)")
	fs.IntVar(&a.logCache, "raft-log-cache", 0, "Raft: keep this many recent entries in a raft.LogCache in front of the log store (0: none)")
	fs.IntVar(&a.proposeDepth, "propose-depth", 0, "entries a shard's leader keeps in Raft at once; commands arriving while that many are in flight go together in the next entry (0: node default 1)")
	fs.StringVar(&a.walMode, "wal-mode", "", "per-group (a WAL per Raft group) or shared (one WAL per member, one fdatasync for the groups writing at once; needs --log-store wal); fixed once the data dir exists (empty: the data dir's mode, shared for a new one with --log-store wal)")
}

func (a *commitPathArgs) check() error {
	switch {
	case a.maxAppendEntries < 0 || a.maxAppendEntries > 1024:
		return errors.New("--max-append-entries must be in 1..1024 (or 0 for the default)")
	case a.commitTimeout != 0 && a.commitTimeout < time.Millisecond:
		return errors.New("--commit-timeout must be at least 1ms")
	case a.logCache < 0 || a.proposeDepth < 0:
		return errors.New("--raft-log-cache and --propose-depth must be >= 0")
	case a.walMode != "" && a.walMode != string(lockd.WALPerGroup) && a.walMode != string(lockd.WALShared):
		return errors.New("--wal-mode must be per-group or shared")
	}
	return nil
}

// member copies the knobs that live outside node.Config (transport, log
// store) into the member's options.
func (a *commitPathArgs) member(o *lockd.Options) {
	o.LogCache = a.logCache
	o.WALMode = lockd.WALMode(a.walMode)
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

// tune copies the knobs into the node's config (zero keeps its defaults).
func (a *commitPathArgs) tune(c *node.Config) {
	c.MaxAppendEntries = a.maxAppendEntries
	c.CommitTimeout = a.commitTimeout
	c.NoBatchApply = a.noBatchApply
	c.ProposeDepth = a.proposeDepth
}
