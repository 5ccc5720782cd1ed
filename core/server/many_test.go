package server_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/node/nodetest"
	"github.com/lockstep/lockstep/core/placement"
	"github.com/lockstep/lockstep/core/server"
	"github.com/lockstep/lockstep/core/service"
	"github.com/lockstep/lockstep/core/shard"
)

// shardedServer serves three lock shards (one single-node group each).
func shardedServer(t *testing.T) *httptest.Server {
	t.Helper()
	var groups []*node.Node
	for range 3 {
		groups = append(groups, nodetest.New(t, 1, nil).Nodes[0])
	}
	ts := httptest.NewServer(front(t, shard.Fixed("n1", groups), service.Config{}, server.Config{}).Handler())
	t.Cleanup(ts.Close)
	return ts
}

// onShards returns one resource name per shard 1..3, in shard order.
func onShards(t *testing.T, prefix string) []string {
	t.Helper()
	out := make([]string, 3)
	for i := 0; i < 1000 && (out[0] == "" || out[1] == "" || out[2] == ""); i++ {
		name := fmt.Sprintf("%s%d", prefix, i)
		if s := placement.Of(name, 3); out[s-1] == "" {
			out[s-1] = name
		}
	}
	if out[0] == "" || out[1] == "" || out[2] == "" {
		t.Fatal("no name found for every shard")
	}
	return out
}

func acquireMany(t *testing.T, ts *httptest.Server, body string) (int, api.AcquireManyResponse, api.Error) {
	t.Helper()
	code, b := do(t, "POST", ts.URL+api.PathAcquireMany, body)
	var out api.AcquireManyResponse
	var e api.Error
	if code == 200 {
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("reply %s: %v", b, err)
		}
	} else if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error reply %s: %v", b, err)
	}
	return code, out, e
}

func manyBody(client string, resources []string, extra string) string {
	names, _ := json.Marshal(resources)
	return fmt.Sprintf(`{"resources":%s,"client_id":%q,"ttl":60000%s}`, names, client, extra)
}

func holders(t *testing.T, ts *httptest.Server, resource string) int {
	t.Helper()
	code, b := do(t, "GET", ts.URL+api.PathStatus+"?resource="+resource, "")
	var st api.StatusResponse
	if code != 200 || json.Unmarshal(b, &st) != nil {
		t.Fatalf("status %s = %d %s", resource, code, b)
	}
	return len(st.Holders) + len(st.Queue)
}

// TestAcquireManyAtomicOnOneShard: goal — resources sharing a hash tag are
// granted together (kind atomic), one lease each in request order, and
// each lease is released like a single acquire's. Method: three {t}
// resources on a three-shard server; then a second client's request for
// one of them and a free one is refused whole, naming the blocker.
func TestAcquireManyAtomicOnOneShard(t *testing.T) {
	ts := shardedServer(t)
	names := []string{"{t}:c", "{t}:a", "{t}:b"}
	code, got, e := acquireMany(t, ts, manyBody("A", names, ""))
	if code != 200 || !got.Granted || got.Kind != api.KindAtomic || len(got.Leases) != 3 {
		t.Fatalf("acquire_many = %d %+v %+v; want 3 leases, atomic", code, got, e)
	}
	for i, l := range got.Leases {
		if l.Resource != names[i] || l.LeaseID == "" || l.FencingToken == 0 || l.ExpiresInMs <= 0 {
			t.Fatalf("lease %d = %+v, want one for %q", i, l, names[i])
		}
	}
	code, refused, _ := acquireMany(t, ts, manyBody("B", []string{"{t}:d", "{t}:a"}, ""))
	if code != 200 || refused.Granted || refused.Blocked != "{t}:a" || len(refused.Leases) != 0 {
		t.Fatalf("overlapping acquire_many = %d %+v; want refused, blocked by {t}:a", code, refused)
	}
	if n := holders(t, ts, "{t}:d"); n != 0 {
		t.Fatalf("{t}:d has %d holders or waiters after a refusal, want none", n)
	}
	for _, l := range got.Leases {
		body := fmt.Sprintf(`{"resource":%q,"lease_id":%q}`, l.Resource, l.LeaseID)
		if code, b := do(t, "POST", ts.URL+api.PathRelease, body); code != 200 {
			t.Fatalf("release %s = %d %s", l.Resource, code, b)
		}
	}
}

// TestAcquireManyCrossShard: goal — resources on several shards are
// refused 400 cross_shard, changing nothing, unless the order is
// canonical; a canonical request is granted whole (leases in request
// order), and one refused by a later shard gives back what the earlier
// shards granted. Method: one resource per shard of a three-shard server.
func TestAcquireManyCrossShard(t *testing.T) {
	ts := shardedServer(t)
	names := onShards(t, "x")
	request := []string{names[2], names[0], names[1]}
	code, _, e := acquireMany(t, ts, manyBody("A", request, ""))
	if code != 400 || e.Code != api.CodeCrossShard {
		t.Fatalf("cross-shard acquire_many = %d %+v, want 400 cross_shard", code, e)
	}
	for _, r := range names {
		if n := holders(t, ts, r); n != 0 {
			t.Fatalf("%s has %d holders after a cross_shard refusal", r, n)
		}
	}
	code, got, e := acquireMany(t, ts, manyBody("A", request, `,"order":"canonical","request_id":"q1"`))
	if code != 200 || !got.Granted || got.Kind != api.KindCanonical || len(got.Leases) != 3 {
		t.Fatalf("canonical acquire_many = %d %+v %+v", code, got, e)
	}
	for i, l := range got.Leases {
		if l.Resource != request[i] {
			t.Fatalf("lease %d is for %q, want %q", i, l.Resource, request[i])
		}
	}
	// B wants shards 1 and 2 (free, its own names) and shard 3 (A's): the
	// earlier shards' grants must be given back.
	other := onShards(t, "y")
	code, refused, _ := acquireMany(t, ts, manyBody("B", []string{other[0], other[1], names[2]}, `,"order":"canonical"`))
	if code != 200 || refused.Granted || refused.Kind != api.KindCanonical || refused.Blocked != names[2] {
		t.Fatalf("canonical refused by shard 3 = %d %+v", code, refused)
	}
	for _, r := range other[:2] {
		if n := holders(t, ts, r); n != 0 {
			t.Fatalf("%s still held after its canonical request was refused further on", r)
		}
	}
}

// TestAcquireManyErrors: goal — acquire_many keeps the acquire error
// contract: malformed requests are 400 invalid_argument, a request id
// reused for other resources is 409, a wait that elapses answers the
// queue position. Method: a table of bodies on a three-shard server.
func TestAcquireManyErrors(t *testing.T) {
	ts := shardedServer(t)
	tooMany := make([]string, api.MaxManyResources+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("{t}:%d", i)
	}
	for name, body := range map[string]string{
		"no resources":   manyBody("A", nil, ""),
		"empty list":     manyBody("A", []string{}, ""),
		"too many":       manyBody("A", tooMany, ""),
		"duplicate":      manyBody("A", []string{"{t}:a", "{t}:a"}, ""),
		"empty name":     manyBody("A", []string{"{t}:a", ""}, ""),
		"unknown order":  manyBody("A", []string{"{t}:a"}, `,"order":"random"`),
		"zero ttl":       `{"resources":["{t}:a"],"client_id":"A","ttl":0}`,
		"no client":      `{"resources":["{t}:a"],"ttl":1000}`,
		"single field":   `{"resource":"{t}:a","client_id":"A","ttl":1000}`,
		"long name":      manyBody("A", []string{"{t}:" + strings.Repeat("n", 300)}, ""),
		"negative wait":  manyBody("A", []string{"{t}:a"}, `,"wait":-1`),
		"unknown policy": manyBody("A", []string{"{t}:a"}, `,"policy":"lottery"`),
	} {
		if code, _, e := acquireMany(t, ts, body); code != 400 || e.Code != api.CodeInvalidArgument {
			t.Errorf("%s: %d %+v, want 400 invalid_argument", name, code, e)
		}
	}
	if code, _, e := acquireMany(t, ts, manyBody("A", []string{"{t}:a", "{t}:b"}, `,"request_id":"r1"`)); code != 200 {
		t.Fatalf("first: %d %+v", code, e)
	}
	if code, _, e := acquireMany(t, ts, manyBody("A", []string{"{t}:a", "{t}:c"}, `,"request_id":"r1"`)); code != 409 || e.Code != api.CodeRequestIDReused {
		t.Fatalf("reused id: %d %+v, want 409 request_id_reused", code, e)
	}
	code, got, e := acquireMany(t, ts, manyBody("B", []string{"{t}:z", "{t}:b"}, `,"wait":200`))
	if code != 200 || got.Granted || got.QueuePosition != 1 {
		t.Fatalf("waited acquire_many = %d %+v %+v; want refused at position 1", code, got, e)
	}
	if n := holders(t, ts, "{t}:z"); n != 0 {
		t.Fatalf("{t}:z kept %d holders or waiters after the wait elapsed", n)
	}
}
