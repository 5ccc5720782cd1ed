package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockstep/lockstep/maelstrom"
)

// TestNetworkPartitions checks the runner's network. Goal: a partition
// drops node-to-node messages across sides, both at send time and while in
// flight, never client traffic, and healing restores delivery. Method: a
// network with constant latency and a recording deliver function.
func TestNetworkPartitions(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	n := newNetwork(1, 50*time.Millisecond, LatencyConstant, func(m maelstrom.Message) bool {
		mu.Lock()
		got[m.Src+">"+m.Dest]++
		mu.Unlock()
		return true
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go n.run(ctx)
	msg := func(src, dest string) maelstrom.Message {
		return maelstrom.Message{Src: src, Dest: dest, Body: []byte(`{"type":"x"}`)}
	}
	n.send(msg("n0", "n1")) // in flight when the partition starts: lost
	n.partition([][]string{{"n0"}, {"n1", "n2"}})
	n.send(msg("n0", "n2")) // across: lost at once
	n.send(msg("n1", "n2")) // same side
	n.send(msg("c1", "n0")) // clients are never cut off
	n.send(msg("n0", "c1"))
	time.Sleep(200 * time.Millisecond)
	n.heal()
	n.send(msg("n0", "n1"))
	time.Sleep(200 * time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{"n1>n2": 1, "c1>n0": 1, "n0>c1": 1, "n0>n1": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s delivered %d times, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if got["n0>n2"] != 0 {
		t.Errorf("a message crossed the partition: %v", got)
	}
	if s := n.snapshot(); s.Partitioned != 2 || s.Sent != 6 || s.Delivered != 4 {
		t.Errorf("stats %+v, want 6 sent, 4 delivered, 2 dropped by the partition", s)
	}
}
