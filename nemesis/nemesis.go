// Package nemesis injects faults into a lock cluster on a seeded schedule.
// The same nemeses act on the simulated cluster and (later) on real lockd
// processes: both implement Cluster.
package nemesis

import (
	"context"
	"math/rand/v2"
	"time"
)

// Cluster is what a nemesis can act on.
type Cluster interface {
	// Nodes lists member ids in a fixed order.
	Nodes() []string
	// Leader returns the current leader if one is known.
	Leader() (string, bool)
	// Cut replaces the set of severed links (both directions) with pairs;
	// an empty set heals the network.
	Cut(pairs [][2]string)
	// Crash stops a node; its disk survives for Restart.
	Crash(id string) error
	// WipeDisk crashes a node and loses its disk: Restart brings it back empty.
	WipeDisk(id string) error
	// Restart starts a crashed node again.
	Restart(id string) error
	// Pause freezes a node's I/O and clock (a GC stop-the-world); Resume
	// lets the backlog through.
	Pause(id string)
	Resume(id string)
	// Clock changes a node's monotonic clock: offset, rate (drift), jump.
	SetClockOffset(id string, offset time.Duration)
	SetClockRate(id string, rate float64)
	JumpClock(id string, d time.Duration)
	// SetDiskFault makes a node's log store slow (delay) and/or failing.
	SetDiskFault(id string, delay time.Duration, fail bool)
	// PauseClient stops one workload client (no renewals, no requests) for
	// d; when it resumes it writes to the fenced store with its old token.
	PauseClient(client int, d time.Duration)
	// Clients is the number of workload clients.
	Clients() int
}

// Recorder receives fault windows for the history.
type Recorder interface {
	Fault(name, target string, start, end time.Time)
}

// Nemesis is one kind of fault.
type Nemesis interface {
	// Name is camelCase verb plus target, e.g. "partitionLeader".
	Name() string
	// Available reports whether the nemesis can act on c (e.g. needs 3 nodes).
	Available(c Cluster) bool
	// Inject applies the fault for d, then undoes it (heal, restart, resume),
	// recording its window. It returns early with ctx.
	Inject(ctx context.Context, c Cluster, rng *rand.Rand, d time.Duration, rec Recorder) error
}
