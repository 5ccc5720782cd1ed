package shardmap

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// maxAsked bounds how many members one refresh asks at once.
const maxAsked = 16

// Notice reads the map version of a reply from member from
// (api.HeaderMapVersion): one newer than the map's means members or the
// shard count changed, so the map is fetched again at once, asking that
// member too, since the others may not have it yet. A version already
// asked for is asked for again only after Gap: the member that is ahead
// may not show it yet, and every reply would start another refresh.
func (c *Cache) Notice(from string, h http.Header) {
	v, ok := api.MapVersion(h)
	if !ok {
		return
	}
	if m := c.current.Load(); m != nil && v <= m.Version {
		return
	}
	c.kick(from, v)
}

// Kick refreshes the map in the background unless a refresh runs, one
// started within Gap, or the cache is closed. Callers never wait for it.
func (c *Cache) Kick() { c.kick("", 0) }

// kick starts a background refresh that also asks first (if set), for a
// map at version want or newer.
func (c *Cache) kick(first string, want uint64) {
	if c.cfg.Fetch == nil {
		return
	}
	newer := want > c.asked.Load()
	if !newer && time.Since(time.Unix(0, c.lastStart.Load())) < c.cfg.Gap {
		return
	}
	if !c.running.CompareAndSwap(false, true) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.life.Err() != nil {
		c.running.Store(false)
		return
	}
	if newer {
		c.asked.Store(want)
	}
	c.lastStart.Store(time.Now().UnixNano())
	seen := c.generation.Load()
	c.wg.Go(func() {
		defer c.running.Store(false)
		// Twice the view bound: it may wait for a refresh in flight first.
		ctx, cancel := context.WithTimeout(c.life, 2*c.cfg.ViewTimeout)
		defer cancel()
		if err := c.refresh(ctx, seen, first, want); err != nil && c.life.Err() == nil {
			c.cfg.Logger.Debug("shardmap: background refresh", "err", err)
		}
	})
}

// Refresh asks the members for their views at once and publishes the
// merged map. seen is the Generation the caller routed by: when a map was
// published since, it is used and no member is asked again.
func (c *Cache) Refresh(ctx context.Context, seen uint64) error {
	return c.refresh(ctx, seen, "", 0)
}

// refresh is Refresh, also asking first (if set); a map published since
// seen serves only when it is at version want or newer.
func (c *Cache) refresh(ctx context.Context, seen uint64, first string, want uint64) error {
	if c.cfg.Fetch == nil {
		return errors.New("shardmap: no Fetch: the cache learns no map")
	}
	select {
	case c.refreshing <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("wait for a refresh: %w", ctx.Err())
	}
	defer func() { <-c.refreshing }()
	if cur := c.current.Load(); c.generation.Load() != seen && cur != nil && cur.Version >= want {
		return nil
	}
	c.lastStart.Store(time.Now().UnixNano())
	members := c.toAsk(first)
	if c.Update(c.fetchViews(ctx, members)...) == Failed {
		return fmt.Errorf("no member of %v answered with a shard map", members)
	}
	return nil
}

// toAsk lists the members a refresh asks: first (so that the cap keeps
// it), then Members, at most maxAsked.
func (c *Cache) toAsk(first string) []string {
	out := make([]string, 0, maxAsked)
	if first != "" {
		out = append(out, first)
	}
	for _, a := range c.Members() {
		if len(out) == maxAsked {
			break
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// fetchViews asks members for their views concurrently and returns the
// answers that arrived within ViewTimeout.
func (c *Cache) fetchViews(ctx context.Context, members []string) []api.ClusterResponse {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ViewTimeout)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	views := make([]api.ClusterResponse, 0, len(members))
	for _, member := range members {
		wg.Go(func() {
			v, err := c.cfg.Fetch(ctx, member)
			if err != nil {
				c.cfg.Logger.Debug("shardmap: member view", "member", member, "err", err)
				return
			}
			mu.Lock()
			views = append(views, v)
			mu.Unlock()
		})
	}
	wg.Wait()
	return views
}

// Run refreshes the map now and every interval until ctx ends, for an
// owner that must hold a fresh map without traffic (a gateway's
// readiness).
func (c *Cache) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := c.Refresh(ctx, c.Generation()); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("shardmap: refresh failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close cancels the background refreshes, waits for them to end and
// starts none after. Foreground calls (Refresh, Update) still work.
func (c *Cache) Close() {
	c.mu.Lock()
	c.end()
	c.mu.Unlock()
	c.wg.Wait()
}
