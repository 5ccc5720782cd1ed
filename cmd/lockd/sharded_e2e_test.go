package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/loopback"
	"github.com/lockstep/lockstep/core/placement"
)

// proc is one lockd process of the test cluster.
type proc struct {
	id, raft, http, dir string
	cmd                 *exec.Cmd
}

func freePort(t *testing.T) string {
	t.Helper()
	addr, err := loopback.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func buildLockd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lockd")
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build lockd: %v\n%s", err, out)
	}
	return bin
}

func (p *proc) start(t *testing.T, bin, peers string, extra ...string) {
	t.Helper()
	args := append([]string{"--id", p.id, "--raft-addr", p.raft, "--http-addr", p.http, "--data-dir", p.dir,
		"--peers", peers, "--bootstrap", "--insecure"}, extra...)
	p.cmd = exec.Command(bin, args...)
	if testing.Verbose() {
		p.cmd.Stderr = os.Stderr
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.id, err)
	}
}

func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
		p.cmd = nil
	}
}

var httpc = &http.Client{Timeout: 10 * time.Second}

func clusterOf(addr string) (api.ClusterResponse, error) {
	var cr api.ClusterResponse
	resp, err := httpc.Get("http://" + addr + api.PathCluster)
	if err != nil {
		return cr, err
	}
	defer resp.Body.Close()
	return cr, json.NewDecoder(resp.Body).Decode(&cr)
}

func postTo(addr, path string, body any, out any) (int, error) {
	b, _ := json.Marshal(body)
	resp, err := httpc.Post("http://"+addr+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
}

// acquireRetry acquires resource through addr, retrying while the shard
// has no leader (503): a failover is expected to end within the deadline.
func acquireRetry(t *testing.T, addr, resource string, deadline time.Duration) api.AcquireResponse {
	t.Helper()
	end := time.Now().Add(deadline)
	rid := fmt.Sprintf("e2e-%s-%d", resource, time.Now().UnixNano())
	for {
		var ar api.AcquireResponse
		code, err := postTo(addr, api.PathAcquire, api.AcquireRequest{Resource: resource, ClientID: "e2e", TTLMs: 60000, RequestID: rid}, &ar)
		if err == nil && code == 200 && ar.Granted {
			return ar
		}
		if time.Now().After(end) {
			t.Fatalf("acquire %s via %s: code %d err %v reply %+v", resource, addr, code, err, ar)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Goal: three real lockd processes started with plain --peers id=raftaddr
// and --shards 3 form a sharded cluster: every member publishes its HTTP
// address through the metadata group, 300 resources spread over all shards
// through every member (forwarding), a kill -9 of one shard's leader stops
// no other shard's grants, its shard recovers, and the killed member
// restarts without --shards and converges; an acquire_many of hash-tagged
// resources is atomic.
func TestShardedProcessCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	bin := buildLockd(t)
	procs := make([]*proc, 3)
	var peers []string
	for i := range procs {
		procs[i] = &proc{id: fmt.Sprintf("n%d", i+1), raft: freePort(t), http: freePort(t), dir: filepath.Join(t.TempDir(), "d")}
		peers = append(peers, procs[i].id+"="+procs[i].raft)
	}
	peerList := strings.Join(peers, ",")
	for _, p := range procs {
		p.start(t, bin, peerList, "--shards", "3")
		defer p.kill()
	}

	// Every shard has a leader and every member's HTTP address is known.
	var cr api.ClusterResponse
	waitUntil(t, 20*time.Second, func() bool {
		var err error
		cr, err = clusterOf(procs[0].http)
		if err != nil || len(cr.Shards) != 3 {
			return false
		}
		for _, s := range cr.Shards {
			if s.Leader == "" || s.LeaderHTTP == "" {
				return false
			}
		}
		return true
	})

	perShard := map[placement.Shard]int{}
	for i := range 300 {
		r := fmt.Sprintf("res-%d", i)
		acquireRetry(t, procs[i%3].http, r, 10*time.Second)
		perShard[placement.Of(r, 3)]++
	}
	// Each member reports its own applied view: wait for it to catch up.
	waitUntil(t, 10*time.Second, func() bool {
		var err error
		if cr, err = clusterOf(procs[0].http); err != nil {
			return false
		}
		for _, s := range cr.Shards {
			if s.Resources != perShard[placement.Shard(s.ID)] {
				return false
			}
		}
		return true
	})
	for _, s := range cr.Shards {
		if s.Resources == 0 {
			t.Errorf("shard %d holds no resource: %+v", s.ID, cr.Shards)
		}
	}

	// An atomic acquire_many of {t}-tagged resources, through every member:
	// all granted in one entry of one shard, then refused whole while held.
	tagged := []string{"{t}:a", "{t}:b", "{t}:c"}
	var many api.AcquireManyResponse
	code, err := postTo(procs[1].http, api.PathAcquireMany, api.AcquireManyRequest{Resources: tagged, ClientID: "m1", TTLMs: 60000}, &many)
	if err != nil || code != 200 || !many.Granted || many.Kind != api.KindAtomic || len(many.Leases) != 3 {
		t.Fatalf("acquire_many: %d %v %+v", code, err, many)
	}
	for _, p := range procs {
		var again api.AcquireManyResponse
		code, err := postTo(p.http, api.PathAcquireMany, api.AcquireManyRequest{Resources: []string{"{t}:c", "{t}:d"}, ClientID: "m2", TTLMs: 60000}, &again)
		if err != nil || code != 200 || again.Granted || again.Blocked != "{t}:c" {
			t.Fatalf("overlapping acquire_many via %s: %d %v %+v", p.id, code, err, again)
		}
		if st, err := statusOf(procs[0].http, "{t}:d", false); err != nil || len(st.Holders) != 0 {
			t.Fatalf("{t}:d held after a refused acquire_many: %+v %v", st, err)
		}
	}

	// Kill -9 shard 1's leader; the shards it does not lead keep granting.
	// Members spread leadership every 2 s: wait until shard 1's leader
	// does not lead every shard, so there are others to watch.
	waitUntil(t, 20*time.Second, func() bool {
		c, err := clusterOf(procs[0].http)
		if err != nil || len(c.Shards) != 3 || c.Shards[0].Leader == "" {
			return false
		}
		cr = c
		for _, s := range c.Shards[1:] {
			if s.Leader != "" && s.Leader != c.Shards[0].Leader {
				return true
			}
		}
		return false
	})
	victimID := cr.Shards[0].Leader
	var victim *proc
	var survivor *proc
	for _, p := range procs {
		if p.id == victimID {
			victim = p
		} else {
			survivor = p
		}
	}
	var others []int
	for _, s := range cr.Shards {
		if s.Leader != victimID {
			others = append(others, s.ID)
		}
	}
	victim.kill()
	for i, n := 0, 0; n < 30 && i < 100_000; i++ {
		r := fmt.Sprintf("during-%d", i)
		s := int(placement.Of(r, 3))
		if !slices.Contains(others, s) {
			continue
		}
		// No retry budget beyond one request's own: these shards never lost a leader.
		var ar api.AcquireResponse
		code, err := postTo(survivor.http, api.PathAcquire, api.AcquireRequest{Resource: r, ClientID: "e2e", TTLMs: 60000}, &ar)
		if err != nil || code != 200 || !ar.Granted {
			t.Fatalf("shard %d (leader alive) refused %s during the failover: %d %v %+v", s, r, code, err, ar)
		}
		n++
	}
	// The victim's shard elects a new leader and grants again.
	for i := 0; ; i++ {
		r := fmt.Sprintf("after-%d", i)
		if placement.Of(r, 3) == 1 {
			acquireRetry(t, survivor.http, r, 15*time.Second)
			break
		}
	}

	// Restart without --shards: the member kept the count and catches up.
	victim.start(t, bin, peerList)
	defer victim.kill()
	waitUntil(t, 20*time.Second, func() bool {
		for i := 0; i < 300; i += 17 {
			r := fmt.Sprintf("res-%d", i)
			st, err := statusOf(victim.http, r, true)
			if err != nil || len(st.Holders) != 1 {
				return false
			}
		}
		c, err := clusterOf(victim.http)
		return err == nil && len(c.Shards) == 3 && c.MapVersion >= cr.MapVersion
	})
}

func statusOf(addr, resource string, stale bool) (api.StatusResponse, error) {
	var st api.StatusResponse
	resp, err := httpc.Get(fmt.Sprintf("http://%s%s?resource=%s&stale=%t", addr, api.PathStatus, resource, stale))
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return st, fmt.Errorf("status %d", resp.StatusCode)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func waitUntil(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(end) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
