package shardmap

import (
	"slices"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/placement"
)

// Map is one merged view of the cluster: what a router needs to place a
// request and send it to its shard's leader. It is never mutated once
// published; callers must not modify it either.
type Map struct {
	// Version is the map version (api.HeaderMapVersion) of the views.
	Version uint64
	// Leaders[s-1] is shard s's leader, "" while unknown.
	Leaders []string
	// Terms[s-1] is the term Leaders[s-1] was reported in.
	Terms []uint64
	// Members are the members the views list, sorted.
	Members []string
	// Fetched is when the views were merged.
	Fetched time.Time
}

// Leader returns the leader of resource's shard, or "" when the map is
// nil, has no shards or does not know that shard's leader.
func (m *Map) Leader(resource string) string {
	if m == nil || len(m.Leaders) == 0 || resource == "" {
		return ""
	}
	return m.Leaders[placement.Of(resource, len(m.Leaders))-1]
}

// merge builds a map from the /cluster views of several members: the
// shard count comes from the newest map version, and each shard's leader
// from the member that reported it in the highest term, so one member
// with a stale view (a deposed leader that has not noticed yet) does not
// win. It returns nil when no view lists shards.
func merge(views []api.ClusterResponse, now time.Time) *Map {
	var m *Map
	for _, v := range views {
		if len(v.Shards) == 0 {
			continue // a member still starting knows no shards
		}
		if m == nil || v.MapVersion > m.Version {
			m = &Map{Version: v.MapVersion, Leaders: make([]string, len(v.Shards)),
				Terms: make([]uint64, len(v.Shards)), Fetched: now}
		}
	}
	if m == nil {
		return nil
	}
	for _, v := range views {
		for _, n := range v.Nodes {
			if n.HTTPAddr != "" && !slices.Contains(m.Members, n.HTTPAddr) {
				m.Members = append(m.Members, n.HTTPAddr)
			}
		}
		if v.MapVersion != m.Version || len(v.Shards) != len(m.Leaders) {
			continue
		}
		for _, sh := range v.Shards {
			i := sh.ID - 1
			if i < 0 || i >= len(m.Leaders) || sh.LeaderHTTP == "" {
				continue
			}
			if m.Leaders[i] == "" || sh.Term > m.Terms[i] {
				m.Leaders[i], m.Terms[i] = sh.LeaderHTTP, sh.Term
			}
		}
	}
	slices.Sort(m.Members)
	return m
}
