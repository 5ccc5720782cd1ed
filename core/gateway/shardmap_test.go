package gateway

import (
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// TestMergeViews: goal — merged views take the shard count from the newest
// map version and each shard's leader from the highest term, so a deposed
// leader's stale view loses. Method: three hand-made views.
func TestMergeViews(t *testing.T) {
	now := time.Now()
	views := []api.ClusterResponse{
		{MapVersion: 3, Nodes: []api.Node{{HTTPAddr: "a"}}, Shards: []api.Shard{
			{ID: 1, LeaderHTTP: "a", Term: 5}, {ID: 2, LeaderHTTP: "a", Term: 2}}},
		{MapVersion: 3, Nodes: []api.Node{{HTTPAddr: "b"}, {HTTPAddr: "a"}}, Shards: []api.Shard{
			{ID: 1, LeaderHTTP: "b", Term: 4}, {ID: 2, LeaderHTTP: "b", Term: 3}}},
		// An older map with another shard count: ignored for the shards.
		{MapVersion: 2, Nodes: []api.Node{{HTTPAddr: "c"}}, Shards: []api.Shard{{ID: 1, LeaderHTTP: "c", Term: 9}}},
		{MapVersion: 9}, // a member still starting: no shards
	}
	m := mergeViews(views, now)
	if m == nil || m.version != 3 || len(m.leaders) != 2 {
		t.Fatalf("merged = %+v, want version 3 with 2 shards", m)
	}
	if m.leaders[0] != "a" || m.leaders[1] != "b" {
		t.Errorf("leaders = %v, want [a b] (highest term each)", m.leaders)
	}
	if len(m.nodes) != 3 || m.nodes[0] != "a" || m.nodes[2] != "c" {
		t.Errorf("nodes = %v, want [a b c]", m.nodes)
	}
	if mergeViews([]api.ClusterResponse{{MapVersion: 1}}, now) != nil {
		t.Error("views without shards merged into a map")
	}
}
