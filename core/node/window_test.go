package node

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// recordingApplier records what reached raft, in order.
type recordingApplier struct{ sent []string }

func (a *recordingApplier) Apply(cmd []byte, _ time.Duration) raft.ApplyFuture {
	a.sent = append(a.sent, string(cmd))
	return nil
}

// TestProposeWindow: goal — with depth d, proposals go to raft at once
// while fewer than d groups are in flight; later ones queue and go
// together, in arrival order, when a group finishes, the last of each
// group marked to report it.
func TestProposeWindow(t *testing.T) {
	for _, depth := range []int{1, 2} {
		a := &recordingApplier{}
		w := &proposeWindow{depth: depth}
		props := map[string]*proposal{}
		submit := func(names ...string) {
			for _, n := range names {
				props[n] = newProposal([]byte(n), time.Second)
				w.submit(a, props[n])
			}
		}
		sent := func(want ...string) {
			t.Helper()
			if len(a.sent) != len(want) {
				t.Fatalf("depth %d: sent %v, want %v", depth, a.sent, want)
			}
			for i := range want {
				if a.sent[i] != want[i] {
					t.Fatalf("depth %d: sent %v, want %v", depth, a.sent, want)
				}
			}
		}
		submit("a")
		sent("a")
		if !props["a"].closes {
			t.Fatalf("depth %d: a alone is a group and must close it", depth)
		}
		submit("b", "c", "d")
		if depth == 1 {
			sent("a")
			w.finished(a) // a's group
			sent("a", "b", "c", "d")
			if props["b"].closes || props["c"].closes || !props["d"].closes {
				t.Fatal("only d closes the group b, c, d")
			}
		} else {
			sent("a", "b") // the second slot takes b; c and d wait
			w.finished(a)  // a's group: c and d go together
			sent("a", "b", "c", "d")
			if !props["b"].closes || props["c"].closes || !props["d"].closes {
				t.Fatal("b closes its own group, d closes c, d")
			}
			w.finished(a) // b's group
		}
		w.finished(a) // the group ending in d
		if w.inflight != 0 || len(w.queue) != 0 {
			t.Fatalf("depth %d: %d in flight, %d queued after every group finished", depth, w.inflight, len(w.queue))
		}
		submit("e")
		sent("a", "b", "c", "d", "e")
		for _, p := range props {
			select {
			case <-p.future:
			default:
				t.Fatalf("depth %d: a sent proposal got no future", depth)
			}
		}
	}
}
