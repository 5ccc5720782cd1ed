package gateway

import (
	"slices"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/placement"
)

// shardMap is one merged view of the cluster: what the gateway needs to
// place a request and send it to its shard's leader. It is never mutated
// once published.
type shardMap struct {
	version uint64
	// leaders[s-1] is shard s's leader HTTP address, "" while unknown.
	leaders []string
	// terms[s-1] is the term leaders[s-1] was reported in.
	terms []uint64
	// nodes are the members' HTTP addresses, sorted.
	nodes   []string
	fetched time.Time
}

// leaderOf returns the HTTP address of the leader of resource's shard, or
// "" when the map has no shards or that shard's leader is unknown.
func (m *shardMap) leaderOf(resource string) string {
	if m == nil || len(m.leaders) == 0 || resource == "" {
		return ""
	}
	s := placement.Of(resource, len(m.leaders))
	return m.leaders[s-1]
}

// mergeViews builds a map from the /cluster replies of several members:
// the shard count comes from the newest map version, and each shard's
// leader from the member that reported it in the highest term, so one
// member with a stale view (a deposed leader that has not noticed yet)
// does not win. It returns nil when no view lists shards.
func mergeViews(views []api.ClusterResponse, now time.Time) *shardMap {
	var m *shardMap
	for _, v := range views {
		if len(v.Shards) == 0 {
			continue // a member still starting knows no shards
		}
		if m == nil || v.MapVersion > m.version {
			m = &shardMap{version: v.MapVersion, leaders: make([]string, len(v.Shards)),
				terms: make([]uint64, len(v.Shards)), fetched: now}
		}
	}
	if m == nil {
		return nil
	}
	for _, v := range views {
		for _, n := range v.Nodes {
			if n.HTTPAddr != "" && !slices.Contains(m.nodes, n.HTTPAddr) {
				m.nodes = append(m.nodes, n.HTTPAddr)
			}
		}
		if v.MapVersion != m.version || len(v.Shards) != len(m.leaders) {
			continue
		}
		for _, sh := range v.Shards {
			i := sh.ID - 1
			if i < 0 || i >= len(m.leaders) || sh.LeaderHTTP == "" {
				continue
			}
			if m.leaders[i] == "" || sh.Term > m.terms[i] {
				m.leaders[i], m.terms[i] = sh.LeaderHTTP, sh.Term
			}
		}
	}
	slices.Sort(m.nodes)
	return m
}
