// Command maelstrom-testnode-stale is a tiny lin-kv node, independent of
// lockstep's service (standard library only, through cmd/internal/linkv),
// that is deliberately not linearizable: it exists to show that
// maelstrom-run flags a broken binary. Writes and compare-and-sets go to
// n0, as in maelstrom-testnode-single, but every node answers reads from
// its own copy, which n0 updates only after updateDelay: a read soon after
// an acknowledged write can see the old value.
package main

import (
	"encoding/json"
	"os"
	"time"

	"github.com/lockstep/lockstep/cmd/internal/linkv"
)

// updateDelay is how long n0 waits before pushing a new value to the other
// nodes' copies.
const updateDelay = 500 * time.Millisecond

func main() {
	n := linkv.New(os.Stdout)
	n.Changed = func(self string, nodes []string, key, value json.RawMessage) {
		pushLater(n, self, nodes, key, value)
	}
	n.Intercept = func(b linkv.Body, reply func(map[string]any)) bool {
		switch {
		case b.Type == "update":
			n.Store(b.Key, b.Value)
		case b.Type == "read" && n.ID() != "n0":
			reply(n.Apply(b)) // from this node's own, possibly stale, copy
		default:
			return false
		}
		return true
	}
	n.Run(os.Stdin)
}

// pushLater sends key's new value to every other node after updateDelay.
// Timers are bounded by the write rate times the delay.
func pushLater(n *linkv.Node, self string, nodes []string, key, value json.RawMessage) {
	time.AfterFunc(updateDelay, func() {
		for _, p := range nodes {
			if p != self {
				n.Send(p, map[string]any{"type": "update", "key": key, "value": value})
			}
		}
	})
}
