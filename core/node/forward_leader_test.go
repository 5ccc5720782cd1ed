package node_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/node/nodetest"
)

// deadHostForwarder holds a forward to a dead member until its context
// ends and then fails it as unsent, as a dial to a crashed host does.
type deadHostForwarder struct {
	node.Forwarder
	mu   *sync.Mutex
	dead map[string]bool
}

func (f deadHostForwarder) Forward(ctx context.Context, leader node.Peer, cmd []byte) ([]byte, error) {
	f.mu.Lock()
	dead := f.dead[leader.ID]
	f.mu.Unlock()
	if dead {
		<-ctx.Done()
		return nil, fmt.Errorf("%w: dial %s: %w", node.ErrUnavailable, leader.ID, ctx.Err())
	}
	return f.Forwarder.Forward(ctx, leader, cmd)
}

// TestForwardedReleaseMovesToTheNextLeader: goal — a follower forwarding a
// release to a leader that just died does not hold it until its caller's
// deadline: once raft on the follower sees the leader gone, the unsent
// release goes to the next leader (the orphanWaiters runs where a holder's
// release spent its every attempt waiting on dead leaders, and the lease
// then outlived its holder). Method: a lease is granted; the leader's host
// dies (forwards to it hang, then fail as unsent); at once a follower, still
// naming it leader, is asked to release with a 20 s deadline; it must be
// released within 10 s (an election takes ~1.5 s here), where without the
// watch it fails at its deadline.
func TestForwardedReleaseMovesToTheNextLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mu, dead := new(sync.Mutex), map[string]bool{}
		c := nodetest.New(t, 3, func(cfg *node.Config) {
			cfg.Forwarder = deadHostForwarder{Forwarder: cfg.Forwarder, mu: mu, dead: dead}
		})
		lead := c.Leader()
		held, err := c.Acquire(context.Background(), lead, "r", "A", time.Minute, 0)
		if err != nil || !held.Granted {
			t.Fatalf("acquire: %+v, %v", held, err)
		}
		f := c.Follower()
		leader, ok := c.Nodes[f].Leader()
		if !ok {
			t.Fatal("the follower knows no leader")
		}
		mu.Lock()
		dead[leader.ID] = true
		mu.Unlock()
		c.Stop(lead)

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start := time.Now()
		res, err := c.Nodes[f].Release(ctx, "r", held.Lease.ID)
		if err != nil || res.Code != lock.OK || time.Since(start) > 10*time.Second {
			t.Fatalf("release through a follower of a dead leader: %+v, %v after %v; want released within 10 s", res, err, time.Since(start))
		}
	})
}
