package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Every partition is a set of severed links handed to Cut; healing is Cut(nil).

// partition builds a fault that severs the links split draws.
func partition(name string, minNodes int, needsLeader bool, split func(c Cluster, rng *rand.Rand) (target string, pairs [][2]string, err error)) *fault {
	return &fault{
		name: name,
		available: func(c Cluster) bool {
			_, hasLeader := c.Leader()
			return len(c.Nodes()) >= minNodes && (hasLeader || !needsLeader)
		},
		apply: func(c Cluster, rng *rand.Rand) (string, func() error, error) {
			target, pairs, err := split(c, rng)
			if err != nil {
				return "", nil, err
			}
			c.Cut(pairs)
			return target, func() error { c.Cut(nil); return nil }, nil
		},
	}
}

// across lists every link between a node of a and a node of b.
func across(a, b []string) [][2]string {
	pairs := make([][2]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			pairs = append(pairs, [2]string{x, y})
		}
	}
	return pairs
}

// sides renders groups that cannot talk to each other as "a,b|c".
func sides(groups ...[]string) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = strings.Join(g, ",")
	}
	return strings.Join(parts, "|")
}

// isolate cuts id off from every other node.
func isolate(c Cluster, id string) [][2]string {
	others := slices.DeleteFunc(slices.Clone(c.Nodes()), func(n string) bool { return n == id })
	return across([]string{id}, others)
}

// partitionRandomHalves splits the nodes at random into floor(n/2) and the rest.
func partitionRandomHalves() *fault {
	return partition("partitionRandomHalves", 2, false, func(c Cluster, rng *rand.Rand) (string, [][2]string, error) {
		nodes := shuffled(c, rng)
		k := len(nodes) / 2
		return sides(nodes[:k], nodes[k:]), across(nodes[:k], nodes[k:]), nil
	})
}

// isolateLeader cuts the current leader off from everyone (its lease must
// run out before anyone else can grant).
func isolateLeader() *fault {
	return partition("isolateLeader", 2, true, func(c Cluster, rng *rand.Rand) (string, [][2]string, error) {
		id, err := leaderNode.pick(c, rng)
		if err != nil {
			return "", nil, err
		}
		return id, isolate(c, id), nil
	})
}

// isolateSingle cuts one random node off from everyone.
func isolateSingle() *fault {
	return partition("isolateSingle", 2, false, func(c Cluster, rng *rand.Rand) (string, [][2]string, error) {
		id, err := anyNode.pick(c, rng)
		if err != nil {
			return "", nil, err
		}
		return id, isolate(c, id), nil
	})
}

// partitionMajorityMinority puts the leader in a minority of floor((n-1)/2)
// nodes, so the majority elects a new leader while the old one still
// believes it leads.
func partitionMajorityMinority() *fault {
	return partition("partitionMajorityMinority", 3, true, func(c Cluster, rng *rand.Rand) (string, [][2]string, error) {
		lead, err := leaderNode.pick(c, rng)
		if err != nil {
			return "", nil, err
		}
		others := slices.DeleteFunc(shuffled(c, rng), func(n string) bool { return n == lead })
		k := len(others)/2 - 1 // minority of (n-1)/2 nodes, the leader included
		minority := append([]string{lead}, others[:k]...)
		majority := others[k:]
		return sides(minority, majority), across(minority, majority), nil
	})
}

// partitionBridge splits the nodes into two sides that cannot talk, plus
// one bridge node that talks to both: with 3 nodes only the link a–b is cut.
// The bridge can win elections on both sides' votes, and a side's leader
// can be deposed by the bridge without hearing from the other side.
func partitionBridge() *fault {
	return partition("partitionBridge", 3, false, func(c Cluster, rng *rand.Rand) (string, [][2]string, error) {
		nodes := shuffled(c, rng)
		bridge, rest := nodes[0], nodes[1:]
		k := len(rest) / 2
		return sides(rest[:k], []string{bridge}, rest[k:]), across(rest[:k], rest[k:]), nil
	})
}

// partitionRing arranges the nodes in a random ring where each node talks
// only to its two neighbours. With 4 or 5 nodes every node still sees a
// majority (itself and two neighbours) but no two nodes see the same one,
// so leadership can bounce around the ring. With n<=3 every pair is
// adjacent and nothing would be cut, so it needs 4 nodes.
func partitionRing() *fault {
	return partition("partitionRing", 4, false, func(c Cluster, rng *rand.Rand) (string, [][2]string, error) {
		ring := shuffled(c, rng)
		n := len(ring)
		var pairs [][2]string
		for i := range n {
			for j := i + 2; j < n; j++ {
				if i == 0 && j == n-1 {
					continue // ring neighbours across the wrap
				}
				pairs = append(pairs, [2]string{ring[i], ring[j]})
			}
		}
		return fmt.Sprintf("ring %s", strings.Join(ring, "-")), pairs, nil
	})
}
