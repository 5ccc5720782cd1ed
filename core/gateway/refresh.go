package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Bounds of a map refresh.
const (
	// viewTimeout bounds one member's /cluster answer: a dead or
	// black-holed member must not hold a refresh up.
	viewTimeout = time.Second
	// maxViewBytes bounds a /cluster reply.
	maxViewBytes = 1 << 20
	// maxMembersAsked bounds how many members one refresh asks at once.
	maxMembersAsked = 16
)

// refresh asks every known member (the --join addresses first, then those
// the last map listed) for its /cluster view at once and publishes the
// merged map. seen is the generation the caller routed by: when another
// request refreshed since, its map is used and no member is asked again.
// A map older than the published one (members that missed a change) is
// dropped.
func (g *Gateway) refresh(ctx context.Context, seen uint64) error {
	select {
	case g.refreshing <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("wait for a refresh: %w", ctx.Err())
	}
	defer func() { <-g.refreshing }()
	if g.generation.Load() != seen {
		return nil
	}
	cur := g.current.Load()
	addrs := slices.Clone(g.cfg.Join)
	if cur != nil {
		for _, a := range cur.nodes {
			if !slices.Contains(addrs, a) {
				addrs = append(addrs, a)
			}
		}
	}
	addrs = addrs[:min(len(addrs), maxMembersAsked)]
	views := g.fetchViews(ctx, addrs)
	next := mergeViews(views, time.Now())
	switch {
	case next == nil:
		g.metrics.refreshes.WithLabelValues("failed").Inc()
		return fmt.Errorf("no member of %v answered with a shard map", addrs)
	case cur != nil && next.version < cur.version:
		g.metrics.refreshes.WithLabelValues("stale").Inc()
		return nil
	}
	g.current.Store(next)
	g.generation.Add(1)
	g.metrics.refreshes.WithLabelValues("ok").Inc()
	g.metrics.mapVersion.Set(float64(next.version))
	return nil
}

// fetchViews asks addrs for their local /cluster view concurrently and
// returns the answers that arrived within viewTimeout.
func (g *Gateway) fetchViews(ctx context.Context, addrs []string) []api.ClusterResponse {
	ctx, cancel := context.WithTimeout(ctx, viewTimeout)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	views := make([]api.ClusterResponse, 0, len(addrs))
	for _, addr := range addrs {
		wg.Go(func() {
			v, err := g.fetchView(ctx, addr)
			if err != nil {
				g.cfg.Logger.Debug("gateway: member view", "member", addr, "err", err)
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

// fetchView asks one member for its own view (local=true: the shards are
// the member's view either way, and it then never asks its leader).
func (g *Gateway) fetchView(ctx context.Context, addr string) (api.ClusterResponse, error) {
	var v api.ClusterResponse
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.scheme+"://"+addr+api.PathCluster+"?local=true", nil)
	if err != nil {
		return v, fmt.Errorf("build request: %w", err)
	}
	resp, err := g.http.Do(req)
	if err != nil {
		return v, fmt.Errorf("ask %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return v, fmt.Errorf("ask %s: HTTP %d", addr, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxViewBytes)).Decode(&v); err != nil {
		return v, fmt.Errorf("decode %s's view: %w", addr, err)
	}
	return v, nil
}

// refreshLoop refreshes the map every RefreshInterval until ctx ends:
// leaders move without any request failing (leader spread), and a map
// version only changes in the metadata group.
func (g *Gateway) refreshLoop(ctx context.Context) {
	t := time.NewTicker(g.cfg.RefreshInterval)
	defer t.Stop()
	for {
		if err := g.refresh(ctx, g.generation.Load()); err != nil && !errors.Is(err, context.Canceled) {
			g.cfg.Logger.Warn("gateway: shard map refresh failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
