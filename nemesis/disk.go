package nemesis

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Slow-disk delay per log-store operation, drawn in [diskDelayMin, diskDelayMax].
const (
	diskDelayMin = 50 * time.Millisecond
	diskDelayMax = 500 * time.Millisecond
)

// clearDisk returns the undo that makes id's disk healthy again.
func clearDisk(c Cluster, id string) func() error {
	return func() error { c.SetDiskFault(id, 0, false); return nil }
}

// slowDiskLeader slows the leader's log store, stretching commit latency
// towards the lease TTL.
func slowDiskLeader() *fault {
	return nodeFault("slowDiskLeader", leaderNode, 1, func(c Cluster, rng *rand.Rand, id string) (string, func() error, error) {
		delay := uniform(rng, diskDelayMin, diskDelayMax)
		c.SetDiskFault(id, delay, false)
		return fmt.Sprintf("delay=%s", delay), clearDisk(c, id), nil
	})
}

// failDiskFollower makes a follower's log-store writes fail.
func failDiskFollower() *fault {
	return nodeFault("failDiskFollower", followerNode, 2, func(c Cluster, _ *rand.Rand, id string) (string, func() error, error) {
		c.SetDiskFault(id, 0, true)
		return "", clearDisk(c, id), nil
	})
}
