package lockd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/loopback"
	"github.com/lockstep/lockstep/core/node"
)

// cluster is three real members on loopback TCP with durable stores.
type cluster struct {
	t       testing.TB
	store   lockd.LogStoreKind
	peers   []node.Peer
	dirs    []string
	members []*lockd.Member
	// with adjusts member i's options (TLS, gRPC) before each start.
	with []func(i int, o *lockd.Options)
}

func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := loopback.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func startCluster(t *testing.T, store lockd.LogStoreKind, with ...func(i int, o *lockd.Options)) *cluster {
	return startClusterTB(t, store, with...)
}

// sharedWAL runs a member with one WAL for all its groups (the metadata
// group and the lock shard).
func sharedWAL(_ int, o *lockd.Options) { o.WALMode = lockd.WALShared }

func startClusterTB(t testing.TB, store lockd.LogStoreKind, with ...func(i int, o *lockd.Options)) *cluster {
	t.Helper()
	c := &cluster{t: t, store: store, members: make([]*lockd.Member, 3), with: with}
	base := t.TempDir()
	for i := 0; i < 3; i++ {
		c.peers = append(c.peers, node.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: freeAddr(t), HTTPAddr: freeAddr(t)})
		c.dirs = append(c.dirs, filepath.Join(base, fmt.Sprintf("n%d", i+1)))
	}
	// Before the first start: a start that fails stops the ones before it
	// (and before t.TempDir's removal, which runs after this).
	t.Cleanup(func() {
		for i, m := range c.members {
			if m != nil {
				c.stop(i)
			}
		}
	})
	for i := range c.peers {
		c.start(i)
	}
	return c
}

func (c *cluster) start(i int) {
	p := c.peers[i]
	opts := lockd.Options{
		ID: p.ID, RaftAddr: p.RaftAddr, HTTPAddr: p.HTTPAddr, DataDir: c.dirs[i], Peers: c.peers, LogStore: c.store,
		Bootstrap: true, Lock: lock.DefaultConfig(), Logger: slog.New(slog.DiscardHandler),
		Tune: func(cfg *node.Config) { cfg.SnapshotThreshold = 8; cfg.TrailingLogs = 4 },
	}
	for _, w := range c.with {
		w(i, &opts)
	}
	m, err := lockd.Start(opts)
	if err != nil {
		c.t.Fatalf("start %s: %v", p.ID, err)
	}
	c.members[i] = m
}

func (c *cluster) stop(i int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.members[i].Stop(ctx); err != nil {
		c.t.Logf("stop %s: %v", c.peers[i].ID, err)
	}
	c.members[i] = nil
}

// leader waits until a live member reports a live leader and returns its index.
func (c *cluster) leader() int {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for i, m := range c.members {
			if m != nil && m.Shard(1).IsLeader() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("no leader within 15s")
	return -1
}

func (c *cluster) url(i int) string { return "http://" + c.peers[i].HTTPAddr }

func post[T any](t *testing.T, url string, body any) (T, int) {
	t.Helper()
	var out T
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
	}
	return out, resp.StatusCode
}

func status(t *testing.T, url, resource string) api.StatusResponse {
	t.Helper()
	var st api.StatusResponse
	getJSON(t, http.DefaultClient, url+api.PathStatus+"?resource="+resource, &st)
	return st
}

// getJSON decodes url's reply into out.
func getJSON(t *testing.T, hc *http.Client, url string, out any) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// TestLeaderCrashKeepsLocksTokensAndQueue: goal — a leader crash loses no
// committed lock state. Method: one holder and three FIFO waiters (blocked on
// a follower), stop the leader process, then check the holder survives with
// the same lease and token, a try-lock is refused, and the waiters are
// granted in order with rising tokens; finally restart the old leader from
// its data dir and check it converges to the same state.
func TestLeaderCrashKeepsLocksTokensAndQueue(t *testing.T) {
	for _, store := range []lockd.LogStoreKind{lockd.LogStoreWAL, lockd.LogStoreBolt} {
		t.Run(string(store), func(t *testing.T) { leaderCrash(t, store) })
	}
	t.Run("wal-shared", func(t *testing.T) { leaderCrash(t, lockd.LogStoreWAL, sharedWAL) })
}

func leaderCrash(t *testing.T, store lockd.LogStoreKind, with ...func(i int, o *lockd.Options)) {
	c := startCluster(t, store, with...)
	lead := c.leader()
	follower := (lead + 1) % 3

	held, code := post[api.AcquireResponse](t, c.url(follower)+api.PathAcquire,
		api.AcquireRequest{Resource: "db", ClientID: "A", TTLMs: 60_000})
	if code != 200 || !held.Granted {
		t.Fatalf("first acquire: code %d %+v", code, held)
	}

	type grant struct {
		client string
		resp   api.AcquireResponse
		code   int
	}
	grants := make(chan grant, 3)
	for _, who := range []string{"B", "C", "D"} {
		go func() {
			r, code := post[api.AcquireResponse](t, c.url(follower)+api.PathAcquire,
				api.AcquireRequest{Resource: "db", ClientID: who, TTLMs: 60_000, WaitMs: 30_000})
			grants <- grant{who, r, code}
		}()
		waitFor(t, func() bool { return len(status(t, c.url(follower), "db").Queue) == queueLen(who) })
	}

	c.stop(lead)
	newLead := c.leader()
	if newLead == lead {
		t.Fatal("stopped member still leads")
	}

	st := status(t, c.url(follower), "db")
	if len(st.Holders) != 1 || st.Holders[0].LeaseFingerprint != api.LeaseFingerprint(held.LeaseID) || st.Holders[0].FencingToken != held.FencingToken {
		t.Fatalf("holder after leader crash = %+v, want lease %s token %d", st.Holders, held.LeaseID, held.FencingToken)
	}
	if got := []string{st.Queue[0].ClientID, st.Queue[1].ClientID, st.Queue[2].ClientID}; fmt.Sprint(got) != "[B C D]" {
		t.Fatalf("queue after leader crash = %v, want [B C D]", got)
	}
	try, code := post[api.AcquireResponse](t, c.url(newLead)+api.PathAcquire,
		api.AcquireRequest{Resource: "db", ClientID: "E", TTLMs: 1000})
	if code != 200 || try.Granted {
		t.Fatalf("try-lock while A holds: code %d %+v, want refused", code, try)
	}

	prevToken, prevLease := held.FencingToken, held.LeaseID
	for _, want := range []string{"B", "C", "D"} {
		if _, code := post[api.ReleaseResponse](t, c.url(newLead)+api.PathRelease,
			api.ReleaseRequest{Resource: "db", LeaseID: prevLease}); code != 200 {
			t.Fatalf("release before %s: code %d", want, code)
		}
		g := <-grants
		if g.code != 200 || !g.resp.Granted || g.client != want {
			t.Fatalf("grant = %s code %d %+v, want %s granted", g.client, g.code, g.resp, want)
		}
		if g.resp.FencingToken <= prevToken {
			t.Fatalf("token %d for %s not above %d", g.resp.FencingToken, want, prevToken)
		}
		prevToken, prevLease = g.resp.FencingToken, g.resp.LeaseID
	}

	c.start(lead)
	waitFor(t, func() bool {
		return bytes.Equal(c.members[lead].Shard(1).Snapshot(), c.members[newLead].Shard(1).Snapshot())
	})
}

// TestRestartedClusterRecoversState: goal — state is durable across a full
// restart. Method: grant a lock, stop all three members, start them again from
// their data dirs with the same command line, and read the same holder back.
func TestRestartedClusterRecoversState(t *testing.T) {
	for _, store := range []lockd.LogStoreKind{lockd.LogStoreWAL, lockd.LogStoreBolt} {
		t.Run(string(store), func(t *testing.T) { restartedCluster(t, store) })
	}
	t.Run("wal-shared", func(t *testing.T) { restartedCluster(t, lockd.LogStoreWAL, sharedWAL) })
}

func restartedCluster(t *testing.T, store lockd.LogStoreKind, with ...func(i int, o *lockd.Options)) {
	c := startCluster(t, store, with...)
	c.leader()
	held, code := post[api.AcquireResponse](t, c.url(0)+api.PathAcquire,
		api.AcquireRequest{Resource: "r", ClientID: "A", TTLMs: 60_000})
	if code != 200 || !held.Granted {
		t.Fatalf("acquire: %d %+v", code, held)
	}
	for i := range c.members {
		c.stop(i)
	}
	for i := range c.members {
		c.start(i)
	}
	c.leader()
	st := status(t, c.url(1), "r")
	if len(st.Holders) != 1 || st.Holders[0].LeaseFingerprint != api.LeaseFingerprint(held.LeaseID) || st.Holders[0].FencingToken != held.FencingToken {
		t.Fatalf("after restart holders = %+v, want %s", st.Holders, held.LeaseID)
	}
	next, _ := post[api.AcquireResponse](t, c.url(2)+api.PathAcquire,
		api.AcquireRequest{Resource: "other", ClientID: "B", TTLMs: 1000})
	if !next.Granted || next.FencingToken <= held.FencingToken {
		t.Fatalf("token after restart %d not above %d", next.FencingToken, held.FencingToken)
	}
}

func queueLen(who string) int { return int(who[0]-'B') + 1 }

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 15s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
