package sim

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Goal: measure how much faster than real time the simulator runs raft.
// Method: for 1 and for 3 independent 3-node clusters in one bubble, one
// client per cluster Applies for 60 virtual seconds (10 with -short or
// -race), either closed-loop (next Apply as soon as the last commits) or
// paced (one Apply per 20 ms); log virtual seconds per wall second and check
// every acknowledged command replicated.
func TestSpeed(t *testing.T) {
	virtual := 60 * time.Second
	if testing.Short() || raceEnabled {
		virtual = 10 * time.Second
	}
	for _, tc := range []struct {
		clusters int
		pace     time.Duration // pause between Applies; 0 is closed-loop
	}{{1, 0}, {3, 0}, {1, 20 * time.Millisecond}, {3, 20 * time.Millisecond}} {
		clusters := tc.clusters
		t.Run(fmt.Sprintf("%d_clusters_pace_%v", clusters, tc.pace), func(t *testing.T) {
			var applies, messages uint64
			wallStart := time.Now()
			synctest.Test(t, func(t *testing.T) {
				var wg sync.WaitGroup
				var mu sync.Mutex
				for k := range clusters {
					net := NewNetwork(Options{Seed: uint64(k + 1), Link: simLink})
					ids := []string{fmt.Sprint("c", k, "n1"), fmt.Sprint("c", k, "n2"), fmt.Sprint("c", k, "n3")}
					c := newCluster(t, net, ids...)
					wg.Go(func() {
						acked := runClient(c, ids, virtual, tc.pace)
						got := c.waitConverged(ids, 10*time.Second)
						if len(got) < acked {
							t.Errorf("cluster %d applied %d, acknowledged %d", k, len(got), acked)
						}
						mu.Lock()
						applies += uint64(acked)
						messages += net.Stats().Delivered
						mu.Unlock()
					})
				}
				wg.Wait()
			})
			wall := time.Since(wallStart)
			if applies == 0 {
				t.Fatal("no command was acknowledged")
			}
			t.Logf("%d nodes, pace %v: %v virtual in %v wall = %.0f virtual s per wall s; %d applies, %d messages delivered",
				3*clusters, tc.pace, virtual, wall.Round(time.Millisecond), virtual.Seconds()/wall.Seconds(), applies, messages)
		})
	}
}

// runClient applies commands one at a time to the current leader of c,
// sleeping pace between them, until the virtual duration has passed and
// returns how many were acknowledged.
func runClient(c *cluster, ids []string, d, pace time.Duration) int {
	deadline := time.Now().Add(d)
	acked := 0
	for i := 0; time.Now().Before(deadline); i++ {
		if err := c.apply(c.waitLeader(ids, 10*time.Second), fmt.Sprint("cmd", i)); err == nil {
			acked++
		}
		time.Sleep(pace)
	}
	return acked
}
