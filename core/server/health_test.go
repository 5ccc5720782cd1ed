package server_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/node/nodetest"
	"github.com/lockstep/lockstep/core/server"
	"github.com/lockstep/lockstep/core/service"
	"github.com/lockstep/lockstep/core/shard"
)

// TestReadinessNeedsAQuorumLeader: goal — /readyz (and /healthz, which is
// readiness) answer 200 only while the node follows a leader it heard from
// recently and has applied what it knows is committed; /livez answers 200
// while the process serves. Method: a 3-node group, one server on a
// follower; all three probes are 200; stop the other two nodes and poll
// until readiness turns 503 (a JSON error), while /livez stays 200.
func TestReadinessNeedsAQuorumLeader(t *testing.T) {
	c := nodetest.New(t, 3, nil)
	survivor := c.Follower()
	ts := httptest.NewServer(front(t, shard.Single(c.Nodes[survivor]), service.Config{RequestTimeout: 500 * time.Millisecond}, server.Config{}).Handler())
	defer ts.Close()
	waitUntil(t, "survivor ready", func() bool {
		code, _ := do(t, "GET", ts.URL+"/readyz", "")
		return code == 200
	})
	for _, path := range []string{"/livez", "/readyz", "/healthz"} {
		if code, b := do(t, "GET", ts.URL+path, ""); code != 200 {
			t.Fatalf("%s with a quorum = %d %s, want 200", path, code, b)
		}
	}
	for i := range c.Nodes {
		if i != survivor {
			c.Stop(i)
		}
	}
	waitUntil(t, "survivor not ready", func() bool {
		code, _ := do(t, "GET", ts.URL+"/readyz", "")
		return code == 503
	})
	for _, path := range []string{"/readyz", "/healthz"} {
		code, b := do(t, "GET", ts.URL+path, "")
		var e api.Error
		if err := json.Unmarshal(b, &e); err != nil || code != 503 || e.Code != api.CodeUnavailable || e.Error == "" {
			t.Fatalf("%s without a quorum = %d %s, want 503 unavailable", path, code, b)
		}
	}
	if code, b := do(t, "GET", ts.URL+"/livez", ""); code != 200 {
		t.Fatalf("/livez without a quorum = %d %s, want 200", code, b)
	}
}

// waitUntil polls cond for up to 10 s (a bound on failure, not a speed claim).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
