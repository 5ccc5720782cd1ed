package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/loopback"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/placement"
	"github.com/lockstep/lockstep/core/shardmap"
)

// testShards is the lock shard count of every test cluster.
const testShards = 3

// cluster is three real sharded members on loopback TCP.
type cluster struct {
	t       *testing.T
	peers   []node.Peer
	members []*lockd.Member
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := loopback.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// startCluster starts the members and waits until every shard has a
// leader. Leader spreading is off so leaders move only when a test moves
// them.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{t: t, members: make([]*lockd.Member, 3)}
	base := t.TempDir()
	for i := range 3 {
		c.peers = append(c.peers, node.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: freeAddr(t), HTTPAddr: freeAddr(t)})
	}
	for i, p := range c.peers {
		m, err := lockd.Start(lockd.Options{
			ID: p.ID, RaftAddr: p.RaftAddr, HTTPAddr: p.HTTPAddr, DataDir: filepath.Join(base, p.ID),
			Peers: c.peers, Shards: testShards, Bootstrap: true, Lock: lock.DefaultConfig(),
			Logger: slog.New(slog.DiscardHandler), SpreadInterval: -1,
		})
		if err != nil {
			t.Fatalf("start %s: %v", p.ID, err)
		}
		c.members[i] = m
	}
	t.Cleanup(func() {
		for i := range c.members {
			c.stop(i)
		}
	})
	for s := 1; s <= testShards; s++ {
		c.leader(s)
	}
	return c
}

func (c *cluster) stop(i int) {
	if c.members[i] == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.members[i].Stop(ctx); err != nil {
		c.t.Logf("stop %s: %v", c.peers[i].ID, err)
	}
	c.members[i] = nil
}

// leader waits until a live member leads shard s and returns its index.
func (c *cluster) leader(s int) int {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for i, m := range c.members {
			if m != nil && m.Shard(s) != nil && m.Shard(s).IsLeader() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("no leader of shard %d within 15s", s)
	return -1
}

func (c *cluster) addrs() []string {
	var out []string
	for _, p := range c.peers {
		out = append(out, p.HTTPAddr)
	}
	return out
}

// directAcquires is how many acquires member i's HTTP API answered itself
// (a request forwarded to it arrives on the member port and is not counted).
func (c *cluster) directAcquires(i int) int {
	c.t.Helper()
	resp, err := http.Get("http://" + c.peers[i].HTTPAddr + "/metrics")
	if err != nil {
		c.t.Fatalf("metrics of %s: %v", c.peers[i].ID, err)
	}
	defer resp.Body.Close()
	total := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, `lockstep_requests_total{op="acquire"`) {
			continue
		}
		n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			c.t.Fatalf("metrics line %q: %v", line, err)
		}
		total += int(n)
	}
	return total
}

// resourceOn returns a resource name that placement puts on shard s.
func resourceOn(t *testing.T, prefix string, s int) string {
	t.Helper()
	for i := range 1000 {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if int(placement.Of(name, testShards)) == s {
			return name
		}
	}
	t.Fatalf("no resource on shard %d", s)
	return ""
}

// startGateway starts a gateway joined to join and stops it with the test.
func startGateway(t *testing.T, join []string, refresh time.Duration) *Gateway {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Join, cfg.HTTPAddr, cfg.RefreshInterval = join, "127.0.0.1:0", refresh
	g, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = g.Stop(ctx)
	})
	return g
}

// waitLeaders waits until g's map names a leader for every shard, asking
// for refreshes itself.
func waitLeaders(t *testing.T, g *Gateway) *shardmap.Map {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := g.routes.Map(); m != nil && len(m.Leaders) == testShards && !slices.Contains(m.Leaders, "") {
			return m
		}
		_ = g.routes.Refresh(context.Background(), g.routes.Generation())
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("gateway map has no leader for every shard: %+v", g.routes.Map())
	return nil
}

// exchange sends one request and returns status and body.
func exchange(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, b
}
