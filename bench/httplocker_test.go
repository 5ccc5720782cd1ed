package bench

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
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
		if req.Policy != api.Throughput || req.TTL != 1500 || req.Wait != 20 {
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

	l, err := NewHTTPLocker(HTTPLockerOptions{URLs: []string{follower.URL}, ClientID: "c1", Policy: api.Throughput})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
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
	l, err := NewHTTPLocker(HTTPLockerOptions{URLs: []string{srv.URL}, ClientID: "c1", Policy: api.FIFO})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = l.Acquire(ctx, AcquireRequest{Key: "k", TTL: time.Second, Mode: api.Exclusive})
	if !errors.Is(err, ErrUnavailable) || ErrorKind(err) != "unavailable" {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
}
