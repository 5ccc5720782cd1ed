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

// TestNoLeaderAnswersUnavailable: goal — with no leader reachable within the
// request deadline a node answers 503 unavailable (the client retries) and
// never hangs. Method: stop two of three nodes, ask the survivor.
func TestNoLeaderAnswersUnavailable(t *testing.T) {
	c := nodetest.New(t, 3, nil)
	lead := c.Leader()
	survivor := (lead + 1) % 3
	for i := range c.Nodes {
		if i != survivor {
			c.Stop(i)
		}
	}
	ts := httptest.NewServer(front(t, shard.Single(c.Nodes[survivor]), service.Config{RequestTimeout: 500 * time.Millisecond}, server.Config{}).Handler())
	defer ts.Close()
	start := time.Now()
	code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"r","client_id":"a","ttl":1000}`)
	var e api.Error
	_ = json.Unmarshal(b, &e)
	if code != 503 || e.Code != api.CodeUnavailable {
		t.Fatalf("got %d %s, want 503 unavailable", code, b)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("took %v, want about the 500ms request deadline", took)
	}
}
