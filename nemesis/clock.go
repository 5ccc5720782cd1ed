package nemesis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Clock fault magnitudes.
const (
	skewMax = 10 * time.Second // offset drawn in [-skewMax, +skewMax]
	rateMin = 0.5              // drift rate drawn log-uniformly in [rateMin, rateMax],
	rateMax = 2.0              // so running slow and fast are equally likely
	jumpMax = 30 * time.Second // forward jump drawn in (0, jumpMax]
)

// skewClock offsets a node's clock and resets the offset to 0 afterwards.
func skewClock(name string, r role) *fault {
	return nodeFault(name, r, 1, func(c Cluster, rng *rand.Rand, id string) (string, func() error, error) {
		offset := uniform(rng, -skewMax, skewMax)
		c.SetClockOffset(id, offset)
		return fmt.Sprintf("offset=%s", offset), func() error { c.SetClockOffset(id, 0); return nil }, nil
	})
}

// driftClock makes a node's clock run fast or slow and restores rate 1.
func driftClock(name string, r role) *fault {
	return nodeFault(name, r, 1, func(c Cluster, rng *rand.Rand, id string) (string, func() error, error) {
		rate := rateMin * math.Pow(rateMax/rateMin, rng.Float64())
		c.SetClockRate(id, rate)
		return fmt.Sprintf("rate=%.3f", rate), func() error { c.SetClockRate(id, 1); return nil }, nil
	})
}

// jumpClock steps a node's clock forward, as a VM resumed with a clock
// step. A monotonic clock never steps back, so there is nothing to undo:
// the window is the time the cluster gets to absorb the jump.
func jumpClock(name string, r role) *fault {
	return nodeFault(name, r, 1, func(c Cluster, rng *rand.Rand, id string) (string, func() error, error) {
		jump := uniform(rng, 1, jumpMax)
		c.JumpClock(id, jump)
		return fmt.Sprintf("jump=%s", jump), func() error { return nil }, nil
	})
}

func skewClockLeader() *fault  { return skewClock("skewClockLeader", leaderNode) }
func skewClockRandom() *fault  { return skewClock("skewClockRandom", anyNode) }
func driftClockLeader() *fault { return driftClock("driftClockLeader", leaderNode) }
func driftClockRandom() *fault { return driftClock("driftClockRandom", anyNode) }
func jumpClockLeader() *fault  { return jumpClock("jumpClockLeader", leaderNode) }
func jumpClockRandom() *fault  { return jumpClock("jumpClockRandom", anyNode) }
