// Package shardmap is the router's cache of a lockstep cluster's shard
// map: which lock shard (Raft group) owns a resource, which member leads
// it, and the map version. The Go client and the gateway both route by
// it: a request goes straight to its shard's leader, saving the forward
// hop a member would otherwise make. Without a map (a cluster that
// publishes none, or none fetched yet) requests go to the members in
// turn; a map only changes which member is asked first.
//
// The map is learnt from the members' GET /cluster?local=true views,
// merged, and fetched again when it ages, when a request finds no leader,
// and at once when a member's reply names a newer map version
// (api.HeaderMapVersion).
package shardmap

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Config configures a Cache.
type Config struct {
	// Seeds are the members known before any map, routed to in turn and
	// asked for the map; at least one. The cache does not parse them nor
	// the addresses Fetch returns: a client's are base URLs, a gateway's
	// host:port.
	Seeds []string
	// Fetch asks one member for its own /cluster view, with addresses in
	// the form the cache hands out. Nil: the cache never learns a map (no
	// shard routing) and routes to the seeds in turn.
	Fetch func(ctx context.Context, member string) (api.ClusterResponse, error)
	// LearnMembers adds the members the map lists to the seeds, to route
	// to and to ask for the map: a gateway's join list only bootstraps
	// it, while a client's endpoints are the rotation its user chose.
	LearnMembers bool
	// MaxAge is how old a map may get before a lookup refreshes it:
	// leaders move without any request failing. Zero: never by age, for an
	// owner that calls Run.
	MaxAge time.Duration
	// Gap is the least time between two background refreshes; one for a
	// map version newer than any asked for before skips it.
	Gap time.Duration
	// ViewTimeout bounds one member's answer: a dead or black-holed member
	// must not hold a refresh up.
	ViewTimeout time.Duration
	// Observe, when set, hears how each merge of views ended and the
	// merged map's version (metrics).
	Observe func(r Result, version uint64)
	// Logger receives failed member views and refreshes. Nil: discard.
	Logger *slog.Logger
}

// DefaultConfig returns the timing defaults; Seeds and Fetch are the
// caller's.
func DefaultConfig() Config {
	return Config{Gap: 100 * time.Millisecond, ViewTimeout: time.Second}
}

// Validate returns one error per broken rule.
func (c Config) Validate() error {
	var errs []error
	if len(c.Seeds) == 0 {
		errs = append(errs, errors.New("shardmap: no seed member"))
	}
	if c.Gap <= 0 || c.ViewTimeout <= 0 {
		errs = append(errs, errors.New("shardmap: Gap and ViewTimeout must be > 0"))
	}
	if c.MaxAge < 0 {
		errs = append(errs, errors.New("shardmap: negative MaxAge"))
	}
	return errors.Join(errs...)
}

// Result is how merging views ended; its text is the gateway's metric
// label.
type Result string

// Results of Update.
const (
	// Published: the merged map is now the current one.
	Published Result = "ok"
	// Stale: the merged map is older than the current one (its members
	// missed a change) and was dropped.
	Stale Result = "stale"
	// Failed: no view listed shards.
	Failed Result = "failed"
)

// Cache holds the current shard map. It is safe for concurrent use. Close
// it when done: it stops the background refreshes.
type Cache struct {
	cfg     Config
	current atomic.Pointer[Map]
	// generation counts published maps: a refresh that finds a map
	// published since its caller looked uses it rather than ask again.
	generation atomic.Uint64
	// refreshing (a one-slot semaphore) serialises refreshes. A channel,
	// not a mutex: a waiter then honours its context, and under
	// testing/synctest (the simulator) it counts as durably blocked, so
	// virtual time advances while a refresh waits on the network.
	refreshing chan struct{}
	// running is set while a background refresh runs.
	running atomic.Bool
	// lastStart is when the last refresh started (unix ns); asked is the
	// newest map version a reply named that a refresh was started for.
	lastStart atomic.Int64
	asked     atomic.Uint64
	// life ends at Close, and with it every background refresh.
	life context.Context
	end  context.CancelFunc
	// mu orders each publish's compare and store, and every wg.Add
	// before Close's wg.Wait.
	mu sync.Mutex
	wg sync.WaitGroup
}

// New checks cfg and returns a Cache holding no map yet.
func New(cfg Config) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Cache{cfg: cfg, refreshing: make(chan struct{}, 1)}
	c.life, c.end = context.WithCancel(context.Background())
	return c, nil
}

// Map returns the current map, nil until one was published.
func (c *Cache) Map() *Map { return c.current.Load() }

// Generation counts the maps published so far; pass it to Refresh.
func (c *Cache) Generation() uint64 { return c.generation.Load() }

// Leader returns the leader of resource's shard, "" when unknown. When
// the map is missing, older than MaxAge or knows no leader for resource
// it starts a background refresh: until the map names the leader every
// request costs a forward hop.
func (c *Cache) Leader(resource string) string {
	m := c.current.Load()
	leader := m.Leader(resource)
	if m == nil || (c.cfg.MaxAge > 0 && time.Since(m.Fetched) > c.cfg.MaxAge) || (leader == "" && resource != "") {
		c.Kick()
	}
	return leader
}

// Members returns the members to route to when no leader serves: the
// seeds, then (LearnMembers) those the map lists. Callers must not modify
// it.
func (c *Cache) Members() []string {
	m := c.current.Load()
	if !c.cfg.LearnMembers || m == nil {
		return c.cfg.Seeds
	}
	out := slices.Clone(c.cfg.Seeds)
	for _, a := range m.Members {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Update merges views (each one member's /cluster answer) and publishes
// the result unless it is older than the current map.
func (c *Cache) Update(views ...api.ClusterResponse) Result {
	next := merge(views, time.Now())
	r, version := c.publish(next), uint64(0)
	if next != nil {
		version = next.Version
	}
	if c.cfg.Observe != nil {
		c.cfg.Observe(r, version)
	}
	return r
}

func (c *Cache) publish(next *Map) Result {
	if next == nil {
		return Failed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.current.Load(); cur != nil && next.Version < cur.Version {
		return Stale
	}
	c.current.Store(next)
	c.generation.Add(1)
	return Published
}
