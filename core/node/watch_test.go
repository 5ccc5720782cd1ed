package node_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/node/nodetest"
)

// snapshotOften makes a group snapshot and trim its log after a few
// entries, so a member that was down catches up by installing a snapshot.
func snapshotOften(cfg *node.Config) {
	cfg.SnapshotThreshold = 16
	cfg.TrailingLogs = 4
	cfg.SnapshotInterval = 200 * time.Millisecond
}

// cycle takes and releases "r" n times through node i.
func cycle(t *testing.T, c *nodetest.Cluster, i, n int) {
	t.Helper()
	bg := context.Background()
	for range n {
		res, err := c.Acquire(bg, i, "r", "A", time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Nodes[i].Release(bg, "r", res.Lease.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// onResource keeps the events of one resource.
func onResource(name string) func(lock.Event) bool {
	return func(ev lock.Event) bool { return ev.Resource == name }
}

// readGrants reads w until it has seen want grants in total (counting
// seen), returning the grant tokens, the events' indexes and the index of
// the last entry read.
func readGrants(t *testing.T, w *node.Watcher, seen, want int) (tokens []uint64, indexes []uint64, last uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for seen+len(tokens) < want {
		entries, err := w.Next(ctx, onResource("r"))
		if err != nil {
			t.Fatalf("after %d grants: %v", seen+len(tokens), err)
		}
		for _, e := range entries {
			indexes = append(indexes, e.Index)
			last = e.Index
			for _, ev := range e.Events {
				if ev.Index != e.Index {
					t.Fatalf("event %+v filed under index %d", ev, e.Index)
				}
				if ev.Kind == lock.EventGrant {
					tokens = append(tokens, ev.Lease.Token)
				}
			}
		}
	}
	return tokens, indexes, last
}

// Goal: a watcher sees every grant of a contended lock, in log order, and
// one that stops and resumes (on another member) from the index after the
// last entry it read misses nothing and sees nothing twice. Method: four
// clients take and release "r" five times each through different members,
// waiting in its queue; a watcher on a follower reads about half of the
// grants and closes, a second one on the leader resumes; the grant tokens
// both saw together must be exactly the clients' tokens, ascending, with
// strictly increasing entry indexes.
func TestWatchSeesEveryGrantAndResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, nil)
		bg := context.Background()
		f, lead := c.Follower(), c.Leader()
		w1, err := c.Nodes[f].Watch(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		const clients, rounds = 4, 5
		var mu sync.Mutex
		var granted []uint64
		var wg sync.WaitGroup
		for k := range clients {
			wg.Go(func() {
				for range rounds {
					res, err := c.Acquire(bg, k%3, "r", string(rune('A'+k)), time.Minute, 30*time.Second)
					if err != nil || !res.Granted {
						t.Errorf("client %d: %+v %v", k, res, err)
						return
					}
					mu.Lock()
					granted = append(granted, res.Lease.Token)
					mu.Unlock()
					time.Sleep(10 * time.Millisecond)
					if _, err := c.Nodes[k%3].Release(bg, "r", res.Lease.ID); err != nil {
						t.Errorf("client %d release: %v", k, err)
						return
					}
				}
			})
		}
		first, idx1, last := readGrants(t, w1, 0, clients*rounds/2)
		w1.Close()
		wg.Wait()
		w2, err := c.Nodes[lead].Watch(context.Background(), last+1)
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Close()
		rest, idx2, _ := readGrants(t, w2, len(first), clients*rounds)
		got := append(first, rest...)
		slices.Sort(granted)
		if !slices.Equal(got, granted) {
			t.Fatalf("watched grants %v, clients were granted %v", got, granted)
		}
		all := append(idx1, idx2...)
		for i := 1; i < len(all); i++ {
			if all[i] <= all[i-1] {
				t.Fatalf("entry indexes not strictly increasing across the resume: %v", all)
			}
		}
	})
}

// Goal: a watch that asks for events this member no longer holds is told
// so (ErrCompacted), never handed a gap: both a resume from an evicted
// index and a live watcher that fell behind the ring. Method: a history of
// 4 events and 10 acquire/release pairs.
func TestWatchCompacted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 1, func(cfg *node.Config) { cfg.WatchHistory = 4 })
		bg := context.Background()
		slow, err := c.Nodes[0].Watch(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		defer slow.Close()
		cycle(t, c, 0, 10)
		if _, err := slow.Next(bg, onResource("r")); !errors.Is(err, node.ErrCompacted) {
			t.Fatalf("watcher that fell behind: %v, want ErrCompacted", err)
		}
		if _, err := c.Nodes[0].Watch(context.Background(), 1); !errors.Is(err, node.ErrCompacted) {
			t.Fatalf("resume from index 1: %v, want ErrCompacted", err)
		}
		fresh, err := c.Nodes[0].Watch(context.Background(), 0)
		if err != nil {
			t.Fatalf("watch from now: %v", err)
		}
		defer fresh.Close()
		res, err := c.Acquire(bg, 0, "r", "B", time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		got, err := fresh.Next(ctx, onResource("r"))
		if err != nil || len(got) != 1 || got[0].Events[0].Lease.Token != res.Lease.Token {
			t.Fatalf("watch from now: %+v %v, want the grant of token %d", got, err, res.Lease.Token)
		}
	})
}

// Goal: a member that caught up by installing a snapshot does not know the
// history the snapshot covers and says so, while a member that applied
// every entry still serves it. Method: tiny snapshot threshold, a follower
// down during 50 acquire/release pairs, restarted; resume from index 1 on
// both.
func TestWatchAfterSnapshotInstall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := nodetest.New(t, 3, snapshotOften)
		f := c.Follower()
		c.Stop(f)
		lead := c.Leader()
		cycle(t, c, lead, 50)
		time.Sleep(time.Second) // let snapshots happen
		c.Start(f)
		deadline := time.Now().Add(10 * time.Second)
		for c.Nodes[f].Stats().Restores == 0 {
			if time.Now().After(deadline) {
				t.Fatal("restarted follower installed no snapshot")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := c.Nodes[f].Watch(context.Background(), 1); !errors.Is(err, node.ErrCompacted) {
			t.Fatalf("resume from 1 on the member that installed a snapshot: %v, want ErrCompacted", err)
		}
		w, err := c.Nodes[lead].Watch(context.Background(), 1)
		if err != nil {
			t.Fatalf("resume from 1 on the leader, which applied every entry: %v", err)
		}
		defer w.Close()
		tokens, _, _ := readGrants(t, w, 0, 50)
		if len(tokens) != 50 || tokens[0] != 1 {
			t.Fatalf("leader's history: %v", tokens)
		}
	})
}
