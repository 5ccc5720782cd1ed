package raftlink

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestIdleGroupKeepsQuiet: goal — an idle group's leader stops sending
// the AppendEntries that repeat what followers know, yet followers still
// learn every entry and commit index, the group wakes on new entries, and
// a leader whose followers are gone still steps down within its lease.
// Method: 3 members, one group with CommitTimeout 5 ms; count the repeats
// the leader's transports answered over an idle second; apply again and
// wait for every replica; then shut the followers down and wait for the
// leader to give up leadership.
func TestIdleGroupKeepsQuiet(t *testing.T) {
	ms := startLinks(t, 3)
	startGroup(t, ms, 0)
	defer func() {
		for _, m := range ms {
			for _, r := range m.rafts {
				_ = r.Shutdown().Error()
			}
			_ = m.link.Close()
		}
	}()
	lead := leaderOf(t, ms, 0)
	if err := add(lead, 7); err != nil {
		t.Fatal(err)
	}
	var leaderTransport *Transport
	for _, m := range ms {
		if m.rafts[0] == lead {
			leaderTransport = m.net.transport(0)
		}
	}
	before := leaderTransport.Quieted()
	time.Sleep(time.Second)
	// 2 followers x ~130 repeats a second at a 5 ms commit timeout; most
	// are answered here (the rest follow each heartbeat's fresh answer).
	if n := leaderTransport.Quieted() - before; n < 100 {
		t.Fatalf("%d repeats answered by the leader's transport in an idle second, want >= 100", n)
	}
	if err := add(lead, 5); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		for deadline := time.Now().Add(5 * time.Second); m.fsms[0].value() != 12; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("replica at %d after the group woke, want 12", m.fsms[0].value())
			}
		}
	}
	for _, m := range ms {
		if m.rafts[0] != lead {
			_ = m.rafts[0].Shutdown().Error()
		}
	}
	for deadline := time.Now().Add(3 * time.Second); lead.State() == raft.Leader; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the leader kept leading with every follower gone")
		}
	}
}
