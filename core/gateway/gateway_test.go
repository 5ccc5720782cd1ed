package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// TestEveryShardThroughGateway: goal — the gateway answers requests for
// resources on every shard, and sends each one straight to its shard's
// leader (no forward hop). Method: a real 3-member, 3-shard cluster; per
// shard, acquire, status and release a resource placed there through the
// gateway, and check that only that shard's leader's HTTP API counted the
// acquire (forwarded requests arrive on the member port, uncounted).
func TestEveryShardThroughGateway(t *testing.T) {
	c := startCluster(t)
	g := startGateway(t, c.addrs(), time.Hour)
	waitLeaders(t, g)
	base := "http://" + g.Addr()
	for s := 1; s <= testShards; s++ {
		leader := c.leader(s)
		before := make([]int, len(c.members))
		for i := range c.members {
			before[i] = c.directAcquires(i)
		}
		res := resourceOn(t, "every", s)
		code, body := exchange(t, http.MethodPost, base+api.PathAcquire,
			fmt.Sprintf(`{"resource":%q,"client_id":"gw","ttl":10000}`, res))
		var acq api.AcquireResponse
		if code != http.StatusOK || json.Unmarshal(body, &acq) != nil || !acq.Granted {
			t.Fatalf("shard %d: acquire %s = %d %s", s, res, code, body)
		}
		// A leader change under load (elections, not the gateway) moves
		// the request elsewhere; only a stable leadership is judged.
		if now := c.leader(s); now != leader {
			t.Logf("shard %d: leader moved from %s to %s during the request; routing not judged", s, c.peers[leader].ID, c.peers[now].ID)
		}
		for i := range c.members {
			if c.leader(s) != leader {
				break
			}
			got := c.directAcquires(i) - before[i]
			if want := map[bool]int{true: 1, false: 0}[i == leader]; got != want {
				t.Errorf("shard %d: member %s answered %d acquires directly, want %d (leader %s)",
					s, c.peers[i].ID, got, want, c.peers[leader].ID)
			}
		}
		code, body = exchange(t, http.MethodGet, base+api.PathStatus+"?resource="+url.QueryEscape(res), "")
		var st api.StatusResponse
		if code != http.StatusOK || json.Unmarshal(body, &st) != nil || len(st.Holders) != 1 {
			t.Fatalf("shard %d: status = %d %s", s, code, body)
		}
		code, body = exchange(t, http.MethodPost, base+api.PathRelease,
			fmt.Sprintf(`{"resource":%q,"lease_id":%q}`, res, acq.LeaseID))
		if code != http.StatusOK || !bytes.Contains(body, []byte(`"released":true`)) {
			t.Fatalf("shard %d: release = %d %s", s, code, body)
		}
	}
	code, body := exchange(t, http.MethodGet, base+api.PathCluster, "")
	var cr api.ClusterResponse
	if code != http.StatusOK || json.Unmarshal(body, &cr) != nil || len(cr.Shards) != testShards {
		t.Fatalf("cluster through the gateway = %d %s", code, body)
	}
	if code, body := exchange(t, http.MethodGet, base+api.PathReady, ""); code != http.StatusOK {
		t.Fatalf("readyz = %d %s", code, body)
	}
}

// TestGatewayRecoversFromLeaderCrash: goal — a gateway whose cached leader
// of a shard is gone finds the new leader within the request's deadline,
// and then routes there directly. Method: refreshes only on failure (the
// periodic one is an hour away); stop the shard's leader, acquire through
// the gateway (the dial fails, the map is refreshed, the request retried),
// then check the map names the new leader and a second acquire reaches it
// without a forward.
func TestGatewayRecoversFromLeaderCrash(t *testing.T) {
	c := startCluster(t)
	g := startGateway(t, c.addrs(), time.Hour)
	const s = 2
	old := c.leader(s)
	if m := waitLeaders(t, g); m.Leaders[s-1] != c.peers[old].HTTPAddr {
		t.Fatalf("map leader of shard %d = %s, want %s", s, m.Leaders[s-1], c.peers[old].HTTPAddr)
	}
	c.stop(old)
	base := "http://" + g.Addr()
	start := time.Now()
	code, body := exchange(t, http.MethodPost, base+api.PathAcquire,
		fmt.Sprintf(`{"resource":%q,"client_id":"gw","ttl":10000,"request_id":"r1"}`, resourceOn(t, "crash", s)))
	if code != http.StatusOK || !bytes.Contains(body, []byte(`"granted":true`)) {
		t.Fatalf("acquire after the leader crash = %d %s (after %v)", code, body, time.Since(start))
	}
	t.Logf("first acquire after the crash took %v", time.Since(start))
	next := c.leader(s)
	want := c.peers[next].HTTPAddr
	deadline := time.Now().Add(5 * time.Second)
	for g.routes.Map().Leaders[s-1] != want {
		if time.Now().After(deadline) {
			t.Fatalf("map leader of shard %d = %q, want the new leader %s", s, g.routes.Map().Leaders[s-1], want)
		}
		// A request for the shard kicks a refresh while its leader is unknown.
		exchange(t, http.MethodGet, base+api.PathStatus+"?resource="+resourceOn(t, "crash", s), "")
		time.Sleep(50 * time.Millisecond)
	}
	before := c.directAcquires(next)
	code, body = exchange(t, http.MethodPost, base+api.PathAcquire,
		fmt.Sprintf(`{"resource":%q,"client_id":"gw","ttl":10000}`, resourceOn(t, "crash2", s)))
	if code != http.StatusOK {
		t.Fatalf("second acquire = %d %s", code, body)
	}
	if got := c.directAcquires(next) - before; got != 1 {
		t.Fatalf("new leader %s answered %d acquires directly, want 1", c.peers[next].ID, got)
	}
}

// TestGatewayJoinFailover: goal — a gateway whose first --join address is
// dead learns the cluster from the next one and serves every request.
// Method: join a closed port first, send requests at once (before any map
// is known: they go to joined members in turn), then wait for readiness.
func TestGatewayJoinFailover(t *testing.T) {
	c := startCluster(t)
	dead := freeAddr(t)
	g := startGateway(t, []string{dead, c.peers[1].HTTPAddr}, time.Hour)
	base := "http://" + g.Addr()
	for s := 1; s <= testShards; s++ {
		for i := range 3 {
			res := resourceOn(t, fmt.Sprintf("join%d", i), s)
			code, body := exchange(t, http.MethodPost, base+api.PathAcquire,
				fmt.Sprintf(`{"resource":%q,"client_id":"gw","ttl":10000}`, res))
			if code != http.StatusOK || !bytes.Contains(body, []byte(`"granted":true`)) {
				t.Fatalf("acquire %s with a dead first join address = %d %s", res, code, body)
			}
		}
	}
	m := waitLeaders(t, g)
	if len(m.Members) != len(c.peers) {
		t.Fatalf("map lists members %v, want all %d", m.Members, len(c.peers))
	}
	if code, body := exchange(t, http.MethodGet, base+api.PathReady, ""); code != http.StatusOK {
		t.Fatalf("readyz = %d %s", code, body)
	}
}

// TestGatewayBadInputLikeMember: goal — bad input gets the same status and
// the same JSON body from the gateway as from a member. Method: a table of
// malformed requests sent to both; bodies are compared byte for byte.
func TestGatewayBadInputLikeMember(t *testing.T) {
	c := startCluster(t)
	g := startGateway(t, c.addrs(), time.Hour)
	waitLeaders(t, g)
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, api.PathAcquire, `{"resource":"r","client_id":"c"}`},
		{http.MethodPost, api.PathAcquire, `{"resource":"r","client_id":"c","ttl":1000,"bogus":1}`},
		{http.MethodPost, api.PathAcquire, `not json`},
		{http.MethodPost, api.PathAcquire, ``},
		{http.MethodPost, api.PathAcquire, `{"resource":"r","client_id":"c","ttl":1000,"mode":"weird"}`},
		{http.MethodPost, api.PathRelease, `{"resource":"r","lease_id":"nope"}`},
		{http.MethodPost, api.PathRenew, `{"resource":"r"}`},
		{http.MethodGet, api.PathAcquire, ``},
		{http.MethodGet, api.PathStatus, ``},
		{http.MethodGet, api.PathStatus + "?resource=r&extra=1", ``},
		{http.MethodGet, "/no/such/path", ``},
		{http.MethodPost, api.PathLive, ``},
		// Other spellings of an endpoint: 404, not a redirect (which this
		// client would follow to a grant).
		{http.MethodPost, "/" + api.PathAcquire, `{"resource":"r","client_id":"c","ttl":1000}`},
		{http.MethodPost, "/lock/../lock/acquire", `{"resource":"r","client_id":"c","ttl":1000}`},
		{http.MethodPost, "/lock/%61cquire", `{"resource":"r","client_id":"c","ttl":1000}`},
	} {
		wantCode, want := exchange(t, tc.method, "http://"+c.peers[0].HTTPAddr+tc.path, tc.body)
		gotCode, got := exchange(t, tc.method, "http://"+g.Addr()+tc.path, tc.body)
		if wantCode/100 != 4 {
			t.Errorf("%s %s %q: member answered %d, the case is not bad input", tc.method, tc.path, tc.body, wantCode)
		}
		if gotCode != wantCode || !bytes.Equal(got, want) {
			t.Errorf("%s %s %q: gateway %d %s, member %d %s", tc.method, tc.path, tc.body, gotCode, got, wantCode, want)
		}
	}
}
