package lockd_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lockd"
)

// TestDeadlockRefusedAtOnce: goal — on a real three-member cluster, an
// acquire whose wait would close a wait-for cycle is answered at once with
// 409 {"code":"deadlock","cycle":[B, A]} (requester first), queues nothing,
// and the request it would have deadlocked with still waits and is granted
// when the cycle's other lock is released. Method: every request through a
// follower, so the leader's answer crosses the forwarding (result codec)
// too; A holds x, B holds y, A waits for y, B asks for x with a wait.
func TestDeadlockRefusedAtOnce(t *testing.T) {
	c := startCluster(t, lockd.LogStoreWAL)
	url := c.url((c.leader()+1)%3) + api.PathAcquire
	var y api.AcquireResponse
	for _, a := range []api.AcquireRequest{{Resource: "x", ClientID: "A", TTLMs: 60_000}, {Resource: "y", ClientID: "B", TTLMs: 60_000}} {
		got, code := post[api.AcquireResponse](t, url, a)
		if code != 200 || !got.Granted {
			t.Fatalf("%s takes %s: %d %+v", a.ClientID, a.Resource, code, got)
		}
		y = got
	}
	waited := make(chan api.AcquireResponse, 1)
	go func() {
		b, _ := json.Marshal(api.AcquireRequest{Resource: "y", ClientID: "A", TTLMs: 60_000, WaitMs: 30_000})
		resp, err := http.Post(url, "application/json", bytes.NewReader(b))
		var out api.AcquireResponse
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
		}
		waited <- out
	}()
	waitFor(t, func() bool { return len(status(t, c.url(0), "y").Queue) == 1 })

	b, _ := json.Marshal(api.AcquireRequest{Resource: "x", ClientID: "B", TTLMs: 60_000, WaitMs: 20_000})
	start := time.Now()
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var refused api.Error
	if resp.StatusCode != http.StatusConflict || json.Unmarshal(raw, &refused) != nil || refused.Code != api.CodeDeadlock ||
		!slices.Equal(refused.Cycle, []string{"B", "A"}) {
		t.Fatalf("B's wait for x: %d %s, want 409 deadlock with cycle [B A]", resp.StatusCode, raw)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the refusal took %v: it should not wait", took)
	}
	if q := status(t, c.url(0), "x").Queue; len(q) != 0 {
		t.Errorf("x's queue after the refusal: %+v, want empty", q)
	}
	if q := status(t, c.url(0), "y").Queue; len(q) != 1 || q[0].ClientID != "A" {
		t.Fatalf("y's queue after the refusal: %+v, want A still waiting", q)
	}

	released, code := post[api.ReleaseResponse](t, c.url(0)+api.PathRelease, api.ReleaseRequest{Resource: "y", LeaseID: y.LeaseID})
	if code != 200 || !released.Released {
		t.Fatalf("B releases y: %d %+v", code, released)
	}
	select {
	case got := <-waited:
		if !got.Granted {
			t.Fatalf("A's wait for y ended %+v, want granted", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("A's wait for y did not end after B released y")
	}
}
