package nemesis

import "math/rand/v2"

// pauseNode freezes a node picked by r, like a stop-the-world GC pause, and
// resumes it: the node then acts on a stale view with its backlog.
func pauseNode(name string, r role) *fault {
	return nodeFault(name, r, 1, func(c Cluster, _ *rand.Rand, id string) (string, func() error, error) {
		c.Pause(id)
		return "", func() error { c.Resume(id); return nil }, nil
	})
}

func pauseLeader() *fault { return pauseNode("pauseLeader", leaderNode) }
func pauseRandom() *fault { return pauseNode("pauseRandom", anyNode) }
