package sim

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// simLink is a LAN-like link: 1–3 ms one way.
var simLink = Link{LatencyBase: time.Millisecond, LatencyJitter: 2 * time.Millisecond}

var threeIDs = []string{"n1", "n2", "n3"}

// Goal: real hashicorp/raft elects one leader over core/raftlink on the
// Network's MemberLink, fails over when the leader is isolated, and
// converges after Heal. Method: a 3-node cluster in a synctest bubble,
// driven through Isolate/Heal.
func TestRaftIsolateLeaderAndHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := NewNetwork(Options{Seed: 1, Link: simLink})
		c := newCluster(t, net, threeIDs...)

		old := c.waitLeader(threeIDs, 10*time.Second)
		if err := c.apply(old, "a"); err != nil {
			t.Fatal(err)
		}

		net.Isolate(old)
		majority := without(threeIDs, old)
		fresh := c.waitLeader(majority, 10*time.Second)
		if fresh == old {
			t.Fatalf("isolated %s still leads the majority", old)
		}
		if err := c.apply(fresh, "b"); err != nil {
			t.Fatal(err)
		}
		// The isolated leader loses its lease and must not commit.
		if err := c.apply(old, "lost"); err == nil {
			t.Fatalf("isolated old leader %s committed a command", old)
		}

		net.Heal()
		final := c.waitLeader(threeIDs, 10*time.Second)
		if err := c.apply(final, "c"); err != nil {
			t.Fatal(err)
		}
		c.waitApplied(threeIDs, []string{"a", "b", "c"}, 10*time.Second)
	})
}

// Goal: Pause holds a leader's I/O without dropping it and Resume delivers
// the backlog. Method: pause the leader, watch the held gauge rise and a new
// leader appear, resume, and check the backlog drains and the old leader
// rejoins as a follower with all entries.
func TestRaftPauseLeaderDeliversBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := NewNetwork(Options{Seed: 2, Link: simLink})
		c := newCluster(t, net, threeIDs...)
		old := c.waitLeader(threeIDs, 10*time.Second)
		clock := NewClock()
		net.AttachClock(old, clock)

		net.Pause(old)
		frozenAt := clock.Now()
		fresh := c.waitLeader(without(threeIDs, old), 10*time.Second)
		if err := c.apply(fresh, "x"); err != nil {
			t.Fatal(err)
		}
		held := net.Stats().Held
		if held == 0 {
			t.Fatal("no messages held while the leader was paused")
		}
		if clock.Now() != frozenAt {
			t.Fatalf("attached clock moved while paused: %v -> %v", frozenAt, clock.Now())
		}
		delivered := net.Stats().Delivered

		net.Resume(old)
		c.waitLeader(threeIDs, 10*time.Second)
		c.waitApplied(threeIDs, []string{"x"}, 10*time.Second)
		s := net.Stats()
		if s.Held != 0 {
			t.Fatalf("%d messages still held after resume", s.Held)
		}
		if s.Delivered < delivered+uint64(held) {
			t.Fatalf("delivered %d after resume, want at least the %d held", s.Delivered-delivered, held)
		}
		if clock.Now() <= frozenAt {
			t.Fatalf("attached clock did not resume: %v", clock.Now())
		}
	})
}

// Goal: a node can crash and restart under the same ID with a new raft
// instance and catch up. Method: shut a follower down (closing its
// transport and taking it off the network), commit without it, restart it
// on a new link over the same stores and wait until it has applied
// everything.
func TestRaftCrashRestartFollower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := NewNetwork(Options{Seed: 3, Link: simLink})
		c := newCluster(t, net, threeIDs...)
		leader := c.waitLeader(threeIDs, 10*time.Second)
		follower := without(threeIDs, leader)[0]

		c.stop(follower)
		if _, err := c.nodes[leader].links.Transport(0); err == nil {
			t.Fatal("second open transport for a live group was accepted")
		}
		if err := c.apply(leader, "while-down"); err != nil {
			t.Fatal(err)
		}
		c.start(follower)
		if err := c.apply(leader, "after-restart"); err != nil {
			t.Fatal(err)
		}
		c.waitApplied(threeIDs, []string{"while-down", "after-restart"}, 10*time.Second)
		if l := c.leaders(threeIDs); len(l) != 1 {
			t.Fatalf("leaders after restart: %v", l)
		}
	})
}

// Goal: raft survives a lossy, duplicating network. Method: 10% loss and 10%
// duplication on every link; every acknowledged command ends up applied, in
// the same order, on all nodes.
func TestRaftLossyNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lossy := simLink
		lossy.DropRate, lossy.DupRate = 0.1, 0.1
		net := NewNetwork(Options{Seed: 4, Link: lossy})
		c := newCluster(t, net, threeIDs...)
		var acked []string
		for i := range 20 {
			cmd := string(rune('a' + i))
			// A failed Apply may still commit (a lost response is ambiguous),
			// so only acknowledged commands are required below.
			if err := c.apply(c.waitLeader(threeIDs, 30*time.Second), cmd); err == nil {
				acked = append(acked, cmd)
			} else {
				t.Logf("unacknowledged: %v", err)
			}
		}
		if len(acked) == 0 {
			t.Fatal("no command was acknowledged")
		}
		final := c.waitConverged(threeIDs, 30*time.Second)
		for _, cmd := range acked {
			if !slices.Contains(final, cmd) {
				t.Fatalf("acknowledged %q missing from %v", cmd, final)
			}
		}
		s := net.Stats()
		if s.Dropped == 0 || s.Duplicated == 0 {
			t.Fatalf("faults not exercised: %+v", s)
		}
	})
}
