package realnet

import (
	"testing"

	"github.com/lockstep/lockstep/nemesis/proxy"
)

// TestGatewayStandsWithItsHome: goal — a partition cuts the gateway off
// from exactly the members its home member is cut from, and a heal
// reconnects it, as the simulator's gatewayCuts do. Method: a gateway slot
// homed on n1 with one link per member; cut {n1,n2} and {n2,n3}, then heal.
func TestGatewayStandsWithItsHome(t *testing.T) {
	c := &Cluster{gw: &gateway{home: "n1", links: map[string]*proxy.Link{}}}
	for _, id := range []string{"n1", "n2", "n3"} {
		c.gw.links[id] = proxy.NewLink(gatewayID + "->" + id)
	}
	states := func() map[string]proxy.State {
		out := map[string]proxy.State{}
		for id, l := range c.gw.links {
			out[id], _ = l.State()
		}
		return out
	}
	c.cutGateway([][2]string{{"n1", "n2"}, {"n2", "n3"}})
	if got := states(); got["n1"] != proxy.Pass || got["n2"] != proxy.Blackhole || got["n3"] != proxy.Pass {
		t.Fatalf("after cutting n1-n2 and n2-n3: %v, want only the link to n2 cut", got)
	}
	c.cutGateway([][2]string{{"n3", "n1"}})
	if got := states(); got["n2"] != proxy.Pass || got["n3"] != proxy.Blackhole {
		t.Fatalf("after cutting n3-n1: %v, want only the link to n3 cut", got)
	}
	c.cutGateway(nil)
	for id, st := range states() {
		if st != proxy.Pass {
			t.Fatalf("after the heal the link to %s is %s", id, st)
		}
	}
}
