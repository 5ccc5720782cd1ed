package realnet

import (
	"time"

	"github.com/lockstep/lockstep/nemesis"
	"github.com/lockstep/lockstep/scenarios"
)

// Short is the CI scenario on real processes: networkPartition's
// workload, checks and expectation on 3 members for 14 s, with a pinned
// schedule of one leader isolation and one leader kill -9 (and restart
// from the same data dir).
func Short() (scenarios.Scenario, error) {
	return pinned("networkPartition", "realnetShort",
		"networkPartition's workload on 3 processes: isolate the leader, then kill -9 the leader")
}

// ShortSharded is the CI scenario of sharded members and the gateway:
// gatewaySharded's workload (every client through a lockd gateway process)
// on 3 members x 3 lock shards for 14 s, with the same pinned schedule
// aimed at lock shard 1's leader; the isolation cuts the gateway off from
// the isolated member when that is its home.
func ShortSharded() (scenarios.Scenario, error) {
	return pinned("gatewaySharded", "realnetShortSharded",
		"gatewaySharded's workload through a lockd gateway on 3 processes x 3 shards: isolate shard 1's leader, then kill -9 it")
}

// pinned is scenario base for 14 s under a pinned schedule of one leader
// isolation and one leader kill -9.
func pinned(base, name, description string) (scenarios.Scenario, error) {
	s, err := scenarios.ByName(base)
	if err != nil {
		return s, err
	}
	s.Name, s.Description = name, description
	s.Nodes, s.DurationMs = 3, 14_000
	// These runs are CI's: beside race-enabled tests on a busy 2-core machine.
	// Safety checks stay as they are; the wall-clock liveness bounds get
	// four times the room (make realnet keeps the scenario's own).
	c := &s.Checks
	for _, b := range []*int64{&c.RecoveryBoundMs, &c.GrantBoundMs, &c.ElectionBoundMs, &c.ExpiryBoundMs, &c.ShardP99BoundMs} {
		*b *= 4
	}
	s.Nemeses = nil
	s.Schedule = nemesis.Schedule{
		{At: 2 * time.Second, Nemesis: "isolateLeader", Duration: 2500 * time.Millisecond},
		{At: 6500 * time.Millisecond, Nemesis: "killLeader", Duration: 2 * time.Second},
	}
	return s, s.Validate()
}

// ShortDisk is the CI scenario of disk faults: leaderCrash's workload on
// 3 members for 11 s under a pinned schedule of a slow log disk on the
// leader and then a failing one on a follower (whose WAL breaks, so it is
// restarted when the disk is healed).
func ShortDisk() (scenarios.Scenario, error) {
	s, err := pinned("leaderCrash", "realnetShortDisk",
		"leaderCrash's workload on 3 processes: slow the leader's WAL syncs, then fail a follower's")
	if err != nil {
		return s, err
	}
	s.DurationMs = 11_000
	s.Schedule = nemesis.Schedule{
		{At: 2 * time.Second, Nemesis: "slowDiskLeader", Duration: 3 * time.Second},
		{At: 6 * time.Second, Nemesis: "failDiskFollower", Duration: 2500 * time.Millisecond},
	}
	return s, s.Validate()
}
