package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/placement"
)

// TestHTTPLockerFollowsLeaderAndRetries points a client at a follower that
// answers 503 and names another node as leader, and checks the client ends
// up granted by the leader, reusing one request id across attempts.
func TestHTTPLockerFollowsLeaderAndRetries(t *testing.T) {
	var leaderHits atomic.Int32
	seenIDs := make(chan string, maxAttempts)
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.AcquireRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		seenIDs <- req.RequestID
		// The first attempt at the leader is a transient 503 (e.g. mid-election).
		if leaderHits.Add(1) == 1 {
			writeAPIError(w, api.CodeUnavailable, "electing")
			return
		}
		if req.Policy != api.Throughput || req.TTLMs != 1500 || req.WaitMs != 20 {
			writeAPIError(w, api.CodeInvalidArgument, "fields not passed through")
			return
		}
		writeJSON(w, api.AcquireResponse{Granted: true, LeaseID: "L1", FencingToken: 42})
	}))
	defer leader.Close()
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == api.PathCluster {
			writeJSON(w, api.ClusterResponse{Leader: "n2", Nodes: []api.Node{
				{ID: "n1", HTTPAddr: r.Host, RaftAddr: "127.0.0.1:1"},
				{ID: "n2", HTTPAddr: leader.Listener.Addr().String(), RaftAddr: "127.0.0.1:2"},
			}})
			return
		}
		writeAPIError(w, api.CodeUnavailable, "not leader")
	}))
	defer follower.Close()

	l := testLocker(t, follower.URL, api.Throughput)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, err := l.Acquire(ctx, AcquireRequest{Key: "k", TTL: 1500 * time.Millisecond, Wait: 20 * time.Millisecond, Mode: api.Exclusive})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Granted || g.Lease != "L1" || g.Token != 42 {
		t.Fatalf("grant %+v", g)
	}
	close(seenIDs)
	var ids []string
	for id := range seenIDs {
		ids = append(ids, id)
	}
	if len(ids) != 2 || ids[0] == "" || ids[0] != ids[1] {
		t.Fatalf("request ids across retries: %q, want one non-empty id twice", ids)
	}
}

// TestHTTPLockerGivesUpWhenNoLeader checks a cluster answering only 503
// yields ErrUnavailable after bounded retries, not a hang.
func TestHTTPLockerGivesUpWhenNoLeader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeAPIError(w, api.CodeUnavailable, "no leader")
	}))
	defer srv.Close()
	l := testLocker(t, srv.URL, api.FIFO)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := l.Acquire(ctx, AcquireRequest{Key: "k", TTL: time.Second, Mode: api.Exclusive})
	if !errors.Is(err, ErrUnavailable) || ErrorKind(err) != "unavailable" {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
}

// TestHTTPLockerRoutesToShardLeader: goal — the leader route sends each
// request to the leader of its resource's shard, not to the metadata
// group's leader (which forwarded every request whose shard it did not
// lead). Method: a cluster reply naming member a as metadata leader and
// shard 1's leader, member b as shard 2's; a member that gets a request
// for a shard it does not lead answers 503 and counts a miss.
func TestHTTPLockerRoutesToShardLeader(t *testing.T) {
	var misses atomic.Int32
	member := func(shard placement.Shard) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req api.AcquireRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			if placement.Of(req.Resource, 2) != shard {
				misses.Add(1)
				writeAPIError(w, api.CodeInvalidArgument, "not this shard's leader")
				return
			}
			writeJSON(w, api.AcquireResponse{Granted: true, LeaseID: "L", FencingToken: 1})
		}))
	}
	a, b := member(1), member(2)
	defer a.Close()
	defer b.Close()
	cluster := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, api.ClusterResponse{Leader: "a",
			Nodes: []api.Node{{ID: "a", HTTPAddr: a.Listener.Addr().String()}, {ID: "b", HTTPAddr: b.Listener.Addr().String()}},
			Shards: []api.Shard{{ID: 2, Leader: "b", LeaderHTTP: b.Listener.Addr().String()},
				{ID: 1, Leader: "a", LeaderHTTP: a.Listener.Addr().String()}}})
	}))
	defer cluster.Close()
	l := testLocker(t, cluster.URL, api.FIFO)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 40 {
		key := fmt.Sprintf("key-%d", i)
		if _, err := l.Acquire(ctx, AcquireRequest{Key: key, TTL: time.Second, Mode: api.Exclusive}); err != nil {
			t.Fatalf("acquire %s: %v", key, err)
		}
	}
	if n := misses.Load(); n != 0 {
		t.Fatalf("%d of 40 requests went to a member that does not lead their shard", n)
	}
}

// testLocker is an HTTPLocker for url, closed when the test ends.
func testLocker(t *testing.T, url string, policy api.Policy) *HTTPLocker {
	t.Helper()
	l, err := NewHTTPLocker(HTTPLockerOptions{URLs: []string{url}, ClientID: "c1", Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// TestHTTPLockerFollowsMovedLeader: goal — the leader route notices a
// shard leader that moved although the old one still answers (a member
// forwards), instead of forwarding for the rest of a run. Method: /cluster
// names member a, then b; with LeaderRefresh 1 ns every request asks
// again, so the request after the move must reach b.
func TestHTTPLockerFollowsMovedLeader(t *testing.T) {
	var hits [2]atomic.Int32
	member := func(i int) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits[i].Add(1)
			writeJSON(w, api.AcquireResponse{Granted: true, LeaseID: "L", FencingToken: 1})
		}))
	}
	a, b := member(0), member(1)
	defer a.Close()
	defer b.Close()
	var moved atomic.Bool
	cluster := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		leader := a
		if moved.Load() {
			leader = b
		}
		writeJSON(w, api.ClusterResponse{Leader: "x", Shards: []api.Shard{{ID: 1, Leader: "x", LeaderHTTP: leader.Listener.Addr().String()}}})
	}))
	defer cluster.Close()
	l, err := NewHTTPLocker(HTTPLockerOptions{URLs: []string{cluster.URL}, ClientID: "c1", Policy: api.FIFO, LeaderRefresh: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	acquire := func() {
		t.Helper()
		if _, err := l.Acquire(ctx, AcquireRequest{Key: "k", TTL: time.Second, Mode: api.Exclusive}); err != nil {
			t.Fatal(err)
		}
	}
	acquire()
	moved.Store(true)
	acquire()
	if hits[0].Load() != 1 || hits[1].Load() != 1 {
		t.Fatalf("requests reached a %d and b %d times, want once each", hits[0].Load(), hits[1].Load())
	}
}
