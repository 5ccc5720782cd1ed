package client

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	mrand "math/rand/v2"
	"sync"
)

// entropy is where a client draws its ids and retry jitter: crypto/rand and
// the runtime's generator by default, or one seeded source (Config.Rand) so
// that a simulated run is reproducible from its seed.
type entropy struct {
	mu   sync.Mutex
	seed *mrand.Rand // nil: crypto/rand ids, runtime jitter
}

// id returns 128 random bits as 32 hex digits, used for client and request
// ids: collisions would merge unrelated requests in server dedupe.
func (e *entropy) id() string {
	var b [16]byte
	if e.seed == nil {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it aborts the program instead.
		return hex.EncodeToString(b[:])
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	binary.LittleEndian.PutUint64(b[:8], e.seed.Uint64())
	binary.LittleEndian.PutUint64(b[8:], e.seed.Uint64())
	return hex.EncodeToString(b[:])
}

// int64N returns a uniform integer in [0, n).
func (e *entropy) int64N(n int64) int64 {
	if e.seed == nil {
		return mrand.Int64N(n)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seed.Int64N(n)
}
