package wasmhost

import (
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"sync"
	"time"
)

// epoch is the guest's wall clock at start: fixed, so that no host time
// reaches the guest.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// clockStep is how far the guest's clock moves on every read. A clock that
// never moved would spin any guest loop that waits for time to pass; any
// fixed step keeps the run a pure function of its inputs.
const clockStep = time.Microsecond

// fakeClock is the guest's only source of time: wall and monotonic time are
// one counter that moves a fixed step per read and by the requested amount
// per sleep, so the guest observes the same times in every replay.
type fakeClock struct {
	mu      sync.Mutex
	elapsed time.Duration
}

// nanotime implements sys.Nanotime.
func (c *fakeClock) nanotime() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.elapsed += clockStep
	return int64(c.elapsed)
}

// walltime implements sys.Walltime.
func (c *fakeClock) walltime() (sec int64, nsec int32) {
	t := epoch.Add(time.Duration(c.nanotime()))
	return t.Unix(), int32(t.Nanosecond())
}

// nanosleep implements sys.Nanosleep: the guest sleeps in zero host time.
func (c *fakeClock) nanosleep(ns int64) {
	if ns <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.elapsed += time.Duration(ns)
}

// randSource is the guest's only source of entropy (WASI random_get, which
// seeds the Go runtime: map order, select, the global math/rand that
// hashicorp/raft draws its timeouts from, crypto/rand).
func randSource(key string) io.Reader {
	return rand.NewChaCha8(sha256.Sum256([]byte("lockstep/wasmhost\x00" + key)))
}
