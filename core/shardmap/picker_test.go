package shardmap

import (
	"slices"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// TestPickerLeaderFirstThenLongestFailed: goal — one request asks its
// shard's leader first, then the members in turn from start, never a
// failed member while another has not failed, and once all have failed
// the one that failed longest ago (not the leader that just failed).
// Method: members a, b, c; the map names b leader; every attempt fails.
func TestPickerLeaderFirstThenLongestFailed(t *testing.T) {
	c := newCache(t, Config{Seeds: []string{"a", "b", "c"}})
	c.Update(api.ClusterResponse{MapVersion: 1, Shards: []api.Shard{{ID: 1, LeaderHTTP: "b"}}})
	p := c.Picker("r", 0)
	var asked []string
	var leaders []bool
	for range 6 {
		m, leader := p.Next()
		asked, leaders = append(asked, m), append(leaders, leader)
		p.Failed(m)
	}
	if want := []string{"b", "a", "c", "b", "a", "c"}; !slices.Equal(asked, want) {
		t.Fatalf("asked %v, want %v", asked, want)
	}
	if want := []bool{true, false, false, true, false, false}; !slices.Equal(leaders, want) {
		t.Fatalf("leader flags %v, want %v", leaders, want)
	}
}

// TestPickerRoutesToLearntMembers: goal — with LearnMembers, a request
// whose seeds failed goes on to the members the map lists; without, it
// stays on the seeds. Method: seed a, a map listing a and z with no
// leader; a fails.
func TestPickerRoutesToLearntMembers(t *testing.T) {
	for _, learn := range []bool{true, false} {
		c := newCache(t, Config{Seeds: []string{"a"}, LearnMembers: learn})
		c.Update(api.ClusterResponse{MapVersion: 1, Nodes: []api.Node{{HTTPAddr: "a"}, {HTTPAddr: "z"}},
			Shards: []api.Shard{{ID: 1}}})
		p := c.Picker("r", 0)
		first, _ := p.Next()
		p.Failed(first)
		second, _ := p.Next()
		want := map[bool]string{true: "z", false: "a"}[learn]
		if first != "a" || second != want {
			t.Errorf("LearnMembers %v: asked %s then %s, want a then %s", learn, first, second, want)
		}
	}
}
