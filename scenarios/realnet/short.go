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
	s, err := scenarios.ByName("networkPartition")
	if err != nil {
		return s, err
	}
	s.Name = "realnetShort"
	s.Description = "networkPartition's workload on 3 processes: isolate the leader, then kill -9 the leader"
	s.Nodes, s.Groups, s.DurationMs = 3, 1, 14_000
	s.Nemeses = nil
	s.Schedule = nemesis.Schedule{
		{At: 2 * time.Second, Nemesis: "isolateLeader", Duration: 2500 * time.Millisecond},
		{At: 6500 * time.Millisecond, Nemesis: "killLeader", Duration: 2 * time.Second},
	}
	return s, s.Validate()
}
