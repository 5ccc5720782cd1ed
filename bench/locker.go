package bench

import (
	"context"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Locker is one benchmark client's handle on a lock service. Each simulated
// client owns its own Locker (own connections, own session) and calls it from
// one goroutine at a time.
type Locker interface {
	// Acquire asks for req.Key, waiting up to req.Wait (0 = try once). A
	// request that ran out of wait returns Granted=false and a nil error.
	Acquire(ctx context.Context, req AcquireRequest) (Grant, error)
	// Release gives back a granted lease. A lease the service no longer
	// knows (e.g. expired) yields ErrNotHolder.
	Release(ctx context.Context, g Grant) error
	// Close frees the client's connections and sessions.
	Close() error
}

// AcquireRequest is what a benchmark client asks a Locker for.
type AcquireRequest struct {
	Key  string
	TTL  time.Duration
	Wait time.Duration
	Mode api.Mode
}

// Grant is the answer to an Acquire.
type Grant struct {
	Granted bool
	Key     string
	// Lease identifies the hold for Release (lease id, mutex key, or the
	// random Redis value).
	Lease string
	// Token is the fencing token, or a random value for services without
	// fencing (see Traits.Fencing).
	Token uint64
}

// ClientConfig configures one Locker.
type ClientConfig struct {
	ID string
	// TTL is the lease length the workload uses; session-based services
	// (etcd) need it when the client is created.
	TTL    time.Duration
	Policy api.Policy
}

// Traits says which features a target really has, so reports do not credit
// a peer with semantics it lacks.
type Traits struct {
	// Fencing: tokens are monotonic per key and usable as fencing tokens.
	Fencing bool
	// Queue: waiters are served by a server-side queue (not client retry).
	Queue bool
	// Shared: shared (reader) mode exists; otherwise shared requests are
	// taken exclusively.
	Shared bool
	// Policies: the fifo/throughput policy field is honoured.
	Policies bool
}

// Target is a lock service under test: it makes Lockers and owns whatever
// it started (servers, child processes, temp dirs).
type Target interface {
	Name() string
	Traits() Traits
	NewLocker(ctx context.Context, cfg ClientConfig) (Locker, error)
	Close() error
}
