package lockd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/node"
)

// startSharded starts the first `up` of three members with `shards` lock
// shards each and a fast leader spread.
func startSharded(t *testing.T, shards, up int) ([]*lockd.Member, []node.Peer) {
	t.Helper()
	return startShardedWith(t, shards, up, nil)
}

// startShardedWith is startSharded with each member's options passed
// through tune (nil: none) before it starts.
func startShardedWith(t testing.TB, shards, up int, tune func(*lockd.Options)) ([]*lockd.Member, []node.Peer) {
	t.Helper()
	var peers []node.Peer
	for i := range 3 {
		// No @httpaddr: members publish it in the metadata group.
		peers = append(peers, node.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: freeAddr(t)})
	}
	base := t.TempDir()
	var members []*lockd.Member
	for i := range up {
		opts := lockd.Options{
			// Port 0: members publish their bound address, and a port
			// picked ahead could be taken by another process meanwhile.
			ID: peers[i].ID, RaftAddr: peers[i].RaftAddr, HTTPAddr: "127.0.0.1:0", DataDir: filepath.Join(base, peers[i].ID),
			Peers: peers, Bootstrap: true, Shards: shards, Lock: lock.DefaultConfig(), Logger: slog.New(slog.DiscardHandler),
			SpreadInterval: 200 * time.Millisecond,
		}
		if tune != nil {
			tune(&opts)
		}
		m, err := lockd.Start(opts)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, m)
		t.Cleanup(func() { stopMember(t, m) })
	}
	return members, peers
}

// Goal: leaders spread: three members with six shards end up leading two
// each (ceil(6/3)), whichever member the elections favoured, and every
// member learns every other's HTTP address from the metadata group.
func TestLeadersSpreadOverMembers(t *testing.T) {
	members, _ := startSharded(t, 6, 3)
	waitFor(t, func() bool {
		led := map[string]int{}
		for s := 1; s <= 6; s++ {
			leader, ok := members[0].Shard(s).Leader()
			if !ok {
				return false
			}
			led[leader.ID]++
		}
		return led["n1"] == 2 && led["n2"] == 2 && led["n3"] == 2
	})
	waitFor(t, func() bool {
		for _, m := range members {
			for _, o := range members {
				if m.Host.APIAddr(o.Host.ID()) != o.Addr() {
					return false
				}
			}
		}
		return true
	})
}

// Goal: no request hangs: a member that can reach no leader (it is alone)
// answers 503 unavailable within about a second, not at the request
// deadline.
func TestUnroutableRequestFailsFast(t *testing.T) {
	members, _ := startSharded(t, 3, 1)
	start := time.Now()
	var e api.Error
	code := postRaw(t, "http://"+members[0].Addr()+api.PathAcquire, `{"resource":"r","client_id":"c","ttl":1000}`, &e)
	took := time.Since(start)
	if code != http.StatusServiceUnavailable || e.Code != api.CodeUnavailable {
		t.Fatalf("alone: %d %+v, want 503 unavailable", code, e)
	}
	// The server's request timeout is 5 s; the answer must come well before.
	if took > 3*time.Second {
		t.Fatalf("answered after %s", took)
	}
}

func stopMember(t testing.TB, m *lockd.Member) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Stop(ctx); err != nil {
		t.Logf("stop %s: %v", m.Host.ID(), err)
	}
}

func postRaw(t *testing.T, url, body string, out any) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}
