package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/placement"
)

// Shard routing: the client caches the shard map from GET /cluster and
// sends a request for a resource straight to its shard's leader, saving
// the forward hop a member would otherwise make. Without a map (a cluster
// that publishes none, or none fetched yet) calls go to the endpoints as
// before; a map only changes which member is asked first.
const (
	// routesRefresh is how old a map may get before it is fetched again:
	// leaders move without any request failing.
	routesRefresh = 2 * time.Second
	// routesGap is the least time between two fetches.
	routesGap = 100 * time.Millisecond
	// routesTimeout bounds one member's /cluster answer.
	routesTimeout = time.Second
)

// routeMap is one fetched shard map; never mutated once published.
type routeMap struct {
	version uint64
	// leaders[s-1] is shard s's leader base URL, "" while unknown.
	leaders []string
	fetched time.Time
}

// routes is the client's shard map cache.
type routes struct {
	current  atomic.Pointer[routeMap]
	fetching atomic.Bool
	// lastFetch is when the last fetch started (unix ns).
	lastFetch atomic.Int64
	// asked is the newest map version a reply named that a fetch was
	// started for.
	asked atomic.Uint64
}

// leaderURL returns the base URL of the leader of resource's shard, or ""
// when it is unknown; it starts a background refresh when the map is
// missing or old.
func (c *Client) leaderURL(resource string) string {
	if !c.routing {
		return ""
	}
	m := c.routes.current.Load()
	if m == nil || time.Since(m.fetched) > routesRefresh {
		c.refreshRoutes()
	}
	if m == nil || len(m.leaders) == 0 || resource == "" {
		return ""
	}
	return m.leaders[placement.Of(resource, len(m.leaders))-1]
}

// refreshRoutes fetches the map in the background unless a fetch runs or
// one started within routesGap. Calls never wait for it.
func (c *Client) refreshRoutes() { c.startFetch("", 0) }

// noticeMapVersion reads the map version a member's reply carries
// (api.HeaderMapVersion): one newer than the cached map's means members or
// the shard count changed, so the map is fetched again at once, first from
// the member that said so. Without a cached map leaderURL fetches anyway.
func (c *Client) noticeMapVersion(endpoint string, h http.Header) {
	v, ok := api.MapVersion(h)
	if !ok || !c.routing {
		return
	}
	if m := c.routes.current.Load(); m == nil || v <= m.version {
		return
	}
	c.startFetch(endpoint, v)
}

// startFetch fetches the map in the background, from first (if set) and
// then the endpoints, until a view at version want or newer, unless a
// fetch runs or one started within routesGap; a version newer than any
// asked for before skips that gap. A closed client fetches nothing.
func (c *Client) startFetch(first string, want uint64) {
	newer := want > c.routes.asked.Load()
	if (!newer && time.Since(time.Unix(0, c.routes.lastFetch.Load())) < routesGap) || !c.routes.fetching.CompareAndSwap(false, true) {
		return
	}
	if newer {
		c.routes.asked.Store(want)
	}
	c.routes.lastFetch.Store(time.Now().UnixNano())
	started := c.goBackground(func() {
		defer c.routes.fetching.Store(false)
		c.fetchRoutesFrom(c.bg.closing, first, want)
	})
	if !started {
		c.routes.fetching.Store(false)
	}
}

// fetchRoutes fetches the map in the foreground from the endpoints.
func (c *Client) fetchRoutes(ctx context.Context) { c.fetchRoutesFrom(ctx, "", 0) }

// fetchRoutesFrom asks first (if set), then the endpoints in turn from the
// one that answered last, for their view, and publishes the first that
// lists shards at version want or newer, and at least the published
// map's; when none does, the newest such view seen.
func (c *Client) fetchRoutesFrom(ctx context.Context, first string, want uint64) {
	if cur := c.routes.current.Load(); cur != nil {
		want = max(want, cur.version)
	}
	start := int(c.preferred.Load())
	asked := make([]string, 0, len(c.endpoints)+1)
	if first != "" {
		asked = append(asked, first)
	}
	for i := range c.endpoints {
		if e := c.endpoints[(start+i)%len(c.endpoints)]; e != first {
			asked = append(asked, e)
		}
	}
	var best *routeMap
	for _, endpoint := range asked {
		var view api.ClusterResponse
		req := request{method: http.MethodGet, path: api.PathCluster, query: url.Values{"local": {"true"}}, timeout: routesTimeout}
		if err := c.roundTrip(ctx, endpoint, req, &view); err != nil {
			c.log.Debug("lockstep: shard map fetch failed", "endpoint", endpoint, "err", err)
			continue
		}
		if len(view.Shards) == 0 || (best != nil && view.MapVersion <= best.version) {
			continue
		}
		scheme, _, _ := strings.Cut(endpoint, "://")
		best = &routeMap{version: view.MapVersion, leaders: make([]string, len(view.Shards)), fetched: time.Now()}
		for _, sh := range view.Shards {
			if sh.ID >= 1 && sh.ID <= len(best.leaders) && sh.LeaderHTTP != "" {
				best.leaders[sh.ID-1] = scheme + "://" + sh.LeaderHTTP
			}
		}
		if best.version >= want {
			break
		}
	}
	if cur := c.routes.current.Load(); best != nil && (cur == nil || best.version >= cur.version) {
		c.routes.current.Store(best)
	}
}
