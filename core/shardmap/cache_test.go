package shardmap

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// newCache builds a cache from DefaultConfig with cfg's seeds, fetch,
// member learning and age, closed with the test.
func newCache(t *testing.T, cfg Config) *Cache {
	t.Helper()
	d := DefaultConfig()
	d.Seeds, d.Fetch, d.LearnMembers, d.MaxAge, d.Observe = cfg.Seeds, cfg.Fetch, cfg.LearnMembers, cfg.MaxAge, cfg.Observe
	c, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// fakeMembers answers Fetch with a one-shard view per member (leader and
// version settable) and records who was asked, in order.
type fakeMembers struct {
	mu      sync.Mutex
	version map[string]uint64
	asked   []string
	// hang makes every fetch wait for its context.
	hang bool
}

func (f *fakeMembers) fetch(ctx context.Context, member string) (api.ClusterResponse, error) {
	f.mu.Lock()
	f.asked = append(f.asked, member)
	v, hang := f.version[member], f.hang
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return api.ClusterResponse{}, ctx.Err()
	}
	return api.ClusterResponse{MapVersion: v, Nodes: []api.Node{{HTTPAddr: member}},
		Shards: []api.Shard{{ID: 1, LeaderHTTP: member, Term: v}}}, nil
}

func (f *fakeMembers) set(member string, v uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version[member] = v
}

// take returns the members asked since the last take.
func (f *fakeMembers) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.asked
	f.asked = nil
	return out
}

func versionHeader(v uint64) http.Header {
	h := http.Header{}
	api.SetMapVersion(h, v)
	return h
}

// TestUpdateKeepsTheNewestMap: goal — merged views are published unless
// older than the current map, views without shards publish nothing, and
// Observe hears each outcome. Method: Update with versions 3, 2, 3 and a
// view without shards.
func TestUpdateKeepsTheNewestMap(t *testing.T) {
	var seen []Result
	c := newCache(t, Config{Seeds: []string{"a"}, Observe: func(r Result, _ uint64) { seen = append(seen, r) }})
	view := func(v uint64, leader string) api.ClusterResponse {
		return api.ClusterResponse{MapVersion: v, Shards: []api.Shard{{ID: 1, LeaderHTTP: leader}}}
	}
	c.Update(view(3, "a"))
	c.Update(view(2, "b"))
	c.Update(view(3, "c"))
	c.Update(api.ClusterResponse{MapVersion: 4})
	if want := []Result{Published, Stale, Published, Failed}; !slices.Equal(seen, want) {
		t.Fatalf("results %v, want %v", seen, want)
	}
	if m := c.Map(); m.Version != 3 || m.Leaders[0] != "c" || c.Generation() != 2 {
		t.Fatalf("map %+v at generation %d, want version 3 led by c at generation 2", m, c.Generation())
	}
}

// TestNoticeAsksTheNamingMemberOncePerGap: goal — a reply naming a newer
// map version refreshes the map at once, asking the member that named it
// too (the seeds may not have it yet); a version already asked for
// that no member shows is asked for again only after Gap, a newer one at
// once; replies at the map's own version ask nothing. Method: a synctest
// bubble; seed a at version 1, member b (not a seed) at 2.
func TestNoticeAsksTheNamingMemberOncePerGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeMembers{version: map[string]uint64{"a": 1, "b": 2}}
		c := newCache(t, Config{Seeds: []string{"a"}, Fetch: f.fetch})
		if err := c.Refresh(t.Context(), c.Generation()); err != nil {
			t.Fatal(err)
		}
		f.take()
		c.Notice("b", versionHeader(1))
		c.Notice("b", http.Header{})
		synctest.Wait()
		if got := f.take(); len(got) != 0 {
			t.Fatalf("replies at the map's version asked %v", got)
		}
		c.Notice("b", versionHeader(2))
		synctest.Wait()
		if got := f.take(); !slices.Contains(got, "b") {
			t.Fatalf("asked %v, want b among them", got)
		}
		if m := c.Map(); m.Version != 2 || m.Leaders[0] != "b" {
			t.Fatalf("map %+v, want version 2 led by b", m)
		}

		// Version 3 is named, but no member shows it.
		time.Sleep(DefaultConfig().Gap)
		for range 10 {
			c.Notice("a", versionHeader(3))
			synctest.Wait()
		}
		if got := f.take(); len(got) != 1 {
			t.Fatalf("10 replies naming version 3 within the gap asked %v, want one refresh (of the seed a)", got)
		}
		c.Notice("a", versionHeader(4))
		synctest.Wait()
		if got := f.take(); len(got) == 0 {
			t.Fatal("a newer version within the gap asked nothing")
		}
		time.Sleep(DefaultConfig().Gap)
		c.Notice("a", versionHeader(4))
		synctest.Wait()
		if got := f.take(); len(got) == 0 {
			t.Fatal("the version asked for again after the gap asked nothing")
		}
	})
}

// TestLeaderRefreshesWhenOldOrLeaderless: goal — a lookup refreshes the
// map in the background when there is none, when it is older than MaxAge,
// and when it names no leader for the resource (at most once per Gap);
// a fresh map that names the leader costs no fetch. Method: a synctest
// bubble and a member whose view is counted.
func TestLeaderRefreshesWhenOldOrLeaderless(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeMembers{version: map[string]uint64{"a": 1}}
		c := newCache(t, Config{Seeds: []string{"a"}, Fetch: f.fetch, MaxAge: 2 * time.Second})
		if got := c.Leader("r"); got != "" {
			t.Fatalf("leader without a map = %q", got)
		}
		synctest.Wait()
		if len(f.take()) != 1 || c.Leader("r") != "a" {
			t.Fatalf("no map fetched by the first lookup: %+v", c.Map())
		}
		synctest.Wait()
		if got := f.take(); len(got) != 0 {
			t.Fatalf("a fresh map's lookup asked %v", got)
		}
		time.Sleep(3 * time.Second)
		c.Leader("r")
		synctest.Wait()
		if got := f.take(); len(got) != 1 {
			t.Fatalf("a map older than MaxAge: lookup asked %v, want a", got)
		}

		c.Update(api.ClusterResponse{MapVersion: 1, Shards: []api.Shard{{ID: 1}}}) // leader unknown
		f.set("a", 0)                                                              // and a still knows none
		time.Sleep(DefaultConfig().Gap)
		for range 10 {
			c.Leader("r")
			synctest.Wait()
		}
		if got := f.take(); len(got) != 1 {
			t.Fatalf("10 lookups of a leaderless shard within the gap asked %v, want one refresh", got)
		}
	})
}

// TestRefreshUsesAMapPublishedSince: goal — a refresh for a generation
// that is no longer current asks no member: the map published since
// serves. Method: publish after reading the generation, then Refresh.
func TestRefreshUsesAMapPublishedSince(t *testing.T) {
	f := &fakeMembers{version: map[string]uint64{"a": 1}}
	c := newCache(t, Config{Seeds: []string{"a"}, Fetch: f.fetch})
	seen := c.Generation()
	c.Update(api.ClusterResponse{MapVersion: 1, Shards: []api.Shard{{ID: 1, LeaderHTTP: "a"}}})
	if err := c.Refresh(t.Context(), seen); err != nil {
		t.Fatal(err)
	}
	if got := f.take(); len(got) != 0 {
		t.Fatalf("refresh of an old generation asked %v", got)
	}
	if err := c.Refresh(t.Context(), c.Generation()); err != nil || len(f.take()) != 1 {
		t.Fatalf("refresh of the current generation: %v, want a asked", err)
	}
}

// TestCloseCancelsBackgroundRefresh: goal — Close cancels a background
// refresh in flight, waits for it, and no refresh starts after. Method: a
// synctest bubble (its end fails the test on a goroutine left behind);
// every member view hangs until cancelled.
func TestCloseCancelsBackgroundRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeMembers{version: map[string]uint64{}, hang: true}
		d := DefaultConfig()
		d.Seeds, d.Fetch = []string{"a"}, f.fetch
		c, err := New(d)
		if err != nil {
			t.Fatal(err)
		}
		c.Kick()
		synctest.Wait()
		if got := f.take(); len(got) != 1 {
			t.Fatalf("Kick asked %v, want a", got)
		}
		start := time.Now()
		c.Close()
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("Close waited %v of bubble time: the refresh was not cancelled", waited)
		}
		time.Sleep(time.Second)
		c.Kick()
		c.Notice("a", versionHeader(9))
		synctest.Wait()
		if got := f.take(); len(got) != 0 {
			t.Fatalf("after Close, asked %v", got)
		}
	})
}
