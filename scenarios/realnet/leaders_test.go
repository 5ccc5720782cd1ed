package realnet

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/scenarios"
)

// TestLeaderOfAStalledSpread: goal — on sharded members, the
// leader-targeting nemeses find lock shard 1's leader while it also leads
// shard 2 (spreading stalled, as a CI run of TestShortShardedScenario saw
// after isolateLeader: n2 kept shards 1 and 2 for the rest of the run and
// killLeader was skipped), unless the run asks for a sole leader (it
// judges the other shards' latency). Method: stand-in members answering
// /cluster?local=true with that run's views, then with leaders spread.
func TestLeaderOfAStalledSpread(t *testing.T) {
	stalled := map[string][]int{"n1": {0, 3}, "n2": {1, 2}, "n3": nil}
	spread := map[string][]int{"n1": {0, 3}, "n2": {2}, "n3": {1}}
	for _, tc := range []struct {
		name   string
		led    map[string][]int
		sole   bool
		want   string
		wantOK bool
	}{
		{"stalled", stalled, false, "n2", true},
		{"stalled, sole leader", stalled, true, "", false},
		{"spread", spread, false, "n3", true},
		{"spread, sole leader", spread, true, "n3", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{opts: ClusterOptions{Shards: 3, LeaderOf: 1, SoleLeader: tc.sole},
				api: &http.Client{Timeout: time.Second}}
			for _, id := range []string{"n1", "n2", "n3"} {
				srv := httptest.NewServer(clusterView(id, tc.led))
				t.Cleanup(srv.Close)
				c.members = append(c.members, &member{id: id, httpAddr: strings.TrimPrefix(srv.URL, "http://"), proc: &process{}})
			}
			if got, ok := c.leader(); got != tc.want || ok != tc.wantOK {
				t.Fatalf("leader() = %q %v, want %q %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// clusterView answers /cluster?local=true as member id would, where led
// lists the groups each member leads (0 the metadata group).
func clusterView(id string, led map[string][]int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != api.PathCluster {
			http.NotFound(w, r)
			return
		}
		cr := api.ClusterResponse{View: "local"}
		for m, groups := range led {
			for _, g := range groups {
				if g == 0 {
					cr.Leader = m
				}
			}
		}
		for s := 1; s <= 3; s++ {
			sh := api.Shard{ID: s}
			for m, groups := range led {
				for _, g := range groups {
					if g == s {
						sh.Leader = m
					}
				}
			}
			cr.Shards = append(cr.Shards, sh)
		}
		_ = json.NewEncoder(w).Encode(cr)
	})
}

// TestSoleLeaderWhereOtherShardsAreJudged: goal — the sole-leader rule
// stays on exactly where a scenario judges the other shards' p99
// latency. Method: the cluster options of shardLeaderCrash (judged) and
// of ShortSharded (not).
func TestSoleLeaderWhereOtherShardsAreJudged(t *testing.T) {
	judged, err := scenarios.ByName("shardLeaderCrash")
	if err != nil {
		t.Fatal(err)
	}
	short, err := ShortSharded()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    scenarios.Scenario
		want bool
	}{{judged, true}, {short, false}} {
		if got := clusterOptions(tc.s, Options{}, t.TempDir(), scenarios.DeriveSeeds(1)).SoleLeader; got != tc.want {
			t.Errorf("%s: SoleLeader %v, want %v", tc.s.Name, got, tc.want)
		}
	}
}
