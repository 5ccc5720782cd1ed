package realnet

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Who leads what, asked of the members over their public API: /livez for
// a one-shard member, /cluster?local=true (the member's own view of the
// metadata group and of every lock shard) for a sharded one.

// Leader implements nemesis.Cluster: the member that leads the group the
// nemeses target (the only lock shard; on sharded members group
// LeaderOf). Crashing or cutting it hits all of its groups, as with any
// process. With SoleLeader, as in the simulator, a lock shard's leader
// counts only while it leads no other lock shard, so that the other
// shards' latency can be judged; the nemesis then waits for leaders to
// spread. Without it any leader of the shard counts: on real processes
// spreading can stall for a whole term (a transfer to a member cut off by
// a silent partition times out, and the member is barred from that
// group's transfers until the term changes), and a pinned step would be
// skipped. Members are asked again for up to leaderPatience: on a loaded
// machine a reply can miss the probe timeout, and a skipped fault is a
// weaker run.
func (c *Cluster) Leader() (string, bool) {
	deadline := time.Now().Add(leaderPatience)
	for {
		if id, ok := c.leader(); ok || time.Now().After(deadline) {
			return id, ok
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leaderPatience bounds how long Leader looks for the leader.
const leaderPatience = 1500 * time.Millisecond

func (c *Cluster) leader() (string, bool) {
	for _, m := range c.members {
		led, ok := c.led(m)
		if !ok || !led[c.opts.LeaderOf] {
			continue
		}
		if c.opts.LeaderOf > 0 && c.opts.SoleLeader {
			for g := 1; g <= c.opts.Shards; g++ {
				if g != c.opts.LeaderOf && led[g] {
					return "", false
				}
			}
		}
		return m.id, true
	}
	return "", false
}

// led reports the groups m says it leads (0 the metadata group, s lock
// shard s; an unsharded member's only shard counts as both), and whether
// it answered.
func (c *Cluster) led(m *member) (map[int]bool, bool) {
	c.mu.Lock()
	up := m.proc != nil && !m.paused
	c.mu.Unlock()
	if !up {
		return nil, false
	}
	if !c.sharded() {
		var h api.Health
		if !c.get(m, api.PathLive, &h) {
			return nil, false
		}
		leads := strings.EqualFold(h.RaftState, "leader")
		return map[int]bool{0: leads, 1: leads}, true
	}
	var cr api.ClusterResponse
	if !c.get(m, api.PathCluster+"?local=true", &cr) {
		return nil, false
	}
	led := map[int]bool{0: cr.Leader == m.id}
	for _, sh := range cr.Shards {
		led[sh.ID] = sh.Leader == m.id
	}
	return led, true
}

// get decodes the JSON reply of m's path into v.
func (c *Cluster) get(m *member, path string, v any) bool {
	resp, err := c.api.Get("http://" + m.httpAddr + path)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(v) == nil
}

// awaitLeaders waits until every group (the metadata group and each lock
// shard) has a member that says it leads.
func (c *Cluster) awaitLeaders(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		have := map[int]bool{}
		for _, m := range c.members {
			led, _ := c.led(m)
			for g, ok := range led {
				have[g] = have[g] || ok
			}
		}
		all := true
		for g := 0; g <= c.GroupCount(); g++ {
			all = all && have[g]
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not every group elected a leader within %s (led: %v; logs in %s)", limit, have, c.opts.Dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitSpread waits, on sharded members, until no member leads more than
// its share of the lock shards, as the members' spreading makes them
// after start-up: the run starts from the simulator's state, and with
// SoleLeader the leader-targeting nemeses act only on a member that leads
// its target shard alone. It gives up quietly after limit (the nemeses
// then skip the steps they cannot take, and say so).
func (c *Cluster) awaitSpread(ctx context.Context, limit time.Duration) {
	if !c.sharded() {
		return
	}
	share := (c.opts.Shards + len(c.members) - 1) / len(c.members)
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		spread, leaders := true, 0
		for _, m := range c.members {
			led, _ := c.led(m)
			n := 0
			for g := 1; g <= c.opts.Shards; g++ {
				if led[g] {
					n++
				}
			}
			leaders += n
			spread = spread && n <= share
		}
		if spread && leaders == c.opts.Shards {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	slog.Info("realnet: leaders not spread over the members yet", "after", limit)
}
