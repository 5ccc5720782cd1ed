// Command maelstrom-testnode-single is a tiny lin-kv node, independent of
// lockstep's service (standard library only, through cmd/internal/linkv),
// used to show that maelstrom-run judges binaries it did not come with. It
// is correct: node n0 holds the only copy of every key, and every other
// node relays each request to n0 and n0's answer back. A relay that gets no
// answer (a partition) is never answered, so the client records it as
// indefinite.
package main

import (
	"os"

	"github.com/lockstep/lockstep/cmd/internal/linkv"
)

func main() {
	linkv.New(os.Stdout).Run(os.Stdin)
}
