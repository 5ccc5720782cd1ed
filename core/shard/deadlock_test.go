package shard

import (
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

func edge(shard int, waiter byte, client string, blocker byte, blockerClient string) shardEdge {
	return shardEdge{shard, lock.WaitEdge{Resource: "r", Waiter: lock.LeaseID{waiter}, Client: client,
		Blocker: lock.LeaseID{blocker}, BlockerClient: blockerClient}}
}

// Goal: the detector finds a cycle through several shards by client (a
// client waiting in one shard and holding in another is one node), finds
// none in a chain, and picks the waiter it saw first most recently as the
// victim. Method: edges by hand.
func TestCycleOfAndVictim(t *testing.T) {
	chain := []shardEdge{edge(1, 'a', "A", 'b', "B"), edge(2, 'c', "B", 'd', "C")}
	if c := cycleOf(chain); c != nil {
		t.Fatalf("chain A->B->C: cycle %v", c)
	}
	cycle := append(chain, edge(1, 'e', "C", 'f', "A"))
	c := cycleOf(cycle)
	if len(c) != 3 || c[0].Client != "A" || c[1].Client != "B" || c[2].Client != "C" {
		t.Fatalf("cycle A->B->C->A: %v", c)
	}
	now := time.Now()
	d := &detector{firstSeen: map[waiterKey]time.Time{
		{1, lock.LeaseID{'a'}}: now, {2, lock.LeaseID{'c'}}: now.Add(time.Second), {1, lock.LeaseID{'e'}}: now,
	}}
	victim := c[0]
	for _, e := range c[1:] {
		if d.younger(e, victim) {
			victim = e
		}
	}
	if victim.Client != "B" {
		t.Fatalf("victim %s, want B (seen last)", victim.Client)
	}
}
