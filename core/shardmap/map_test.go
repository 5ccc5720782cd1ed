package shardmap

import (
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/placement"
)

// TestMergeViews: goal — merged views take the shard count from the newest
// map version and each shard's leader from the highest term, so a deposed
// leader's stale view loses; members come from every view. Method: three
// hand-made views.
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
	m := merge(views, now)
	if m == nil || m.Version != 3 || len(m.Leaders) != 2 {
		t.Fatalf("merged = %+v, want version 3 with 2 shards", m)
	}
	if m.Leaders[0] != "a" || m.Leaders[1] != "b" {
		t.Errorf("leaders = %v, want [a b] (highest term each)", m.Leaders)
	}
	if len(m.Members) != 3 || m.Members[0] != "a" || m.Members[2] != "c" {
		t.Errorf("members = %v, want [a b c]", m.Members)
	}
	if merge([]api.ClusterResponse{{MapVersion: 1}}, now) != nil {
		t.Error("views without shards merged into a map")
	}
}

// TestMapLeaderPlacesResource: goal — a map routes a resource to the
// leader of the shard placement gives it, and answers "" where it cannot.
// Method: a two-shard map, a resource per shard, a nil map and an empty
// resource.
func TestMapLeaderPlacesResource(t *testing.T) {
	m := &Map{Version: 1, Leaders: []string{"a", "b"}}
	for _, r := range []string{"x", "y", "z", "w"} {
		if got, want := m.Leader(r), m.Leaders[placement.Of(r, 2)-1]; got != want {
			t.Errorf("Leader(%q) = %q, want %q", r, got, want)
		}
	}
	if got := (*Map)(nil).Leader("x"); got != "" {
		t.Errorf("nil map's leader = %q", got)
	}
	if got := m.Leader(""); got != "" {
		t.Errorf("leader of no resource = %q", got)
	}
}
