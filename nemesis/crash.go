package nemesis

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

// crashNode crashes a node picked by r (its disk survives) and restarts it.
func crashNode(name string, r role) *fault {
	return nodeFault(name, r, 1, func(c Cluster, _ *rand.Rand, id string) (string, func() error, error) {
		if err := c.Crash(id); err != nil {
			return "", nil, err
		}
		return "", func() error { return c.Restart(id) }, nil
	})
}

func killLeader() *fault   { return crashNode("killLeader", leaderNode) }
func killFollower() *fault { return crashNode("killFollower", followerNode) }
func killRandom() *fault   { return crashNode("killRandom", anyNode) }

// wipeNode makes one random node lose its disk and come back empty. It
// needs 3 nodes so that a majority keeps the state; below that it would be
// wipeMajority.
func wipeNode() *fault {
	return nodeFault("wipeNode", anyNode, 3, func(c Cluster, _ *rand.Rand, id string) (string, func() error, error) {
		if err := c.WipeDisk(id); err != nil {
			return "", nil, err
		}
		return "", func() error { return c.Restart(id) }, nil
	})
}

// wipeMajority wipes a random majority at once and restarts it empty:
// committed state is gone, and a scenario's checker is expected to flag it
// (this nemesis checks the checker, not the service).
func wipeMajority() *fault {
	return &fault{
		name:      "wipeMajority",
		available: func(c Cluster) bool { return len(c.Nodes()) >= 3 },
		apply: func(c Cluster, rng *rand.Rand) (string, func() error, error) {
			nodes := shuffled(c, rng)
			majority := nodes[:len(nodes)/2+1]
			var wiped []string
			restart := func() error {
				var errs []error
				for _, id := range wiped {
					if err := c.Restart(id); err != nil {
						errs = append(errs, fmt.Errorf("restart %s: %w", id, err))
					}
				}
				return errors.Join(errs...)
			}
			for _, id := range majority {
				if err := c.WipeDisk(id); err != nil {
					if len(wiped) == 0 {
						return "", nil, fmt.Errorf("wipe %s: %w", id, err)
					}
					return strings.Join(wiped, ","), restart, fmt.Errorf("wipe %s: %w", id, err)
				}
				wiped = append(wiped, id)
			}
			return strings.Join(wiped, ","), restart, nil
		},
	}
}
