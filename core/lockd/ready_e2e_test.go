package lockd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/node"
)

// heldTransport holds the AppendEntries that carry entries or a commit
// index (a follower's catch-up traffic) until release is closed.
// Heartbeats, which raft's NetworkTransport answers on its fast path, pass:
// the member knows its leader while its state machine still holds only
// what it found on disk.
type heldTransport struct {
	raft.Transport
	release <-chan struct{}
	rpcs    chan raft.RPC
	stop    chan struct{}
	once    sync.Once
}

func holdCatchUp(t raft.Transport, release <-chan struct{}) *heldTransport {
	h := &heldTransport{Transport: t, release: release, rpcs: make(chan raft.RPC), stop: make(chan struct{})}
	go h.run()
	return h
}

func (h *heldTransport) Consumer() <-chan raft.RPC { return h.rpcs }

func (h *heldTransport) run() {
	in := h.Transport.Consumer()
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-h.stop:
			return
		}
		if ae, ok := rpc.Command.(*raft.AppendEntriesRequest); ok && (len(ae.Entries) > 0 || ae.LeaderCommitIndex > 0) {
			select {
			case <-h.release:
			case <-h.stop:
				return
			}
		}
		select {
		case h.rpcs <- rpc:
		case <-h.stop:
			return
		}
	}
}

// RequestPreVote keeps pre-vote on (raft uses it only on transports that
// have it).
func (h *heldTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return h.Transport.(raft.WithPreVote).RequestPreVote(id, target, args, resp)
}

func (h *heldTransport) Close() error {
	h.once.Do(func() { close(h.stop) })
	if c, ok := h.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// probe is one look at a member: its /readyz code and its stale status.
type probe struct {
	ready int
	stale api.StatusResponse
}

func (p probe) String() string {
	caught := "absent"
	if p.stale.CaughtUp != nil {
		caught = fmt.Sprint(*p.stale.CaughtUp)
	}
	return fmt.Sprintf("readyz %d, stale status %d holders, caught_up %s", p.ready, len(p.stale.Holders), caught)
}

func probeMember(t *testing.T, hc *http.Client, base, resource string) probe {
	t.Helper()
	var p probe
	resp, err := hc.Get(base + api.PathReady)
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	p.ready = resp.StatusCode
	resp, err = hc.Get(base + api.PathStatus + "?stale=true&resource=" + resource)
	if err != nil {
		t.Fatalf("stale status: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stale status: code %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&p.stale); err != nil {
		t.Fatalf("stale status: %v", err)
	}
	return p
}

// TestRestartedMemberIsReadyOnlyOnceCaughtUp: goal — a restarted member
// answers /readyz 200 only once its lock shard has applied what the
// leader had committed, and its stale status never passes an empty table
// off as current. Method: a 3-member cluster grants a lock; one follower
// stops and starts again from its disk with its catch-up AppendEntries
// held (heartbeats pass, so it knows its leader at once while its state
// machine is empty). Probe readyz and stale status from the moment it
// listens: while held, readyz must not be 200 and stale status must say
// caught_up false, and a watch resuming at the grant (its index as a
// watch on the leader reported it; past what the member applied, within
// the log) is accepted; after release, the watch delivers
// the grant and readyz turns 200, and every 200 and every caught_up true
// comes with the lock present.
func TestRestartedMemberIsReadyOnlyOnceCaughtUp(t *testing.T) {
	release := make(chan struct{})
	gated := -1 // the member started with its catch-up held
	c := startCluster(t, lockd.LogStoreWAL, func(i int, o *lockd.Options) {
		o.Tune = nil // no snapshots: the restarted member's state machine starts empty
		if i == gated {
			o.TuneShard = func(g uint64, cfg *node.Config) {
				if g == 1 {
					cfg.Transport = holdCatchUp(cfg.Transport, release)
				}
			}
		}
	})
	lead := c.leader()
	follower := (lead + 1) % 3
	hc := &http.Client{Timeout: 5 * time.Second}
	// The grant's index as a watch reports it: the shard's last index
	// after the acquire answered may already be a later entry (each
	// member's start, say), past which a watch of db waits forever.
	grants := watchLines(t, c.url(lead), url.Values{"resource": {"db"}})
	lease, code := post[api.AcquireResponse](t, c.url(lead)+api.PathAcquire,
		api.AcquireRequest{Resource: "db", ClientID: "A", TTLMs: 60_000})
	if code != 200 || !lease.Granted {
		t.Fatalf("acquire: %d %+v", code, lease)
	}
	grantIndex := nextWatchMessage(t, grants).Index
	waitFor(t, func() bool { return len(probeMember(t, hc, c.url(follower), "db").stale.Holders) == 1 })

	c.stop(follower)
	gated = follower
	c.start(follower)
	check := func(p probe) {
		t.Helper()
		present := len(p.stale.Holders) == 1
		if p.stale.CaughtUp == nil {
			t.Fatalf("stale status without caught_up: %v", p)
		}
		if p.ready == http.StatusOK && !present {
			t.Fatalf("ready without the lock: %v", p)
		}
		if *p.stale.CaughtUp && !present {
			t.Fatalf("caught_up true without the lock: %v", p)
		}
	}
	// Held for long enough that several probes see the member knowing its
	// leader, yet under the leader's 5 s RPC timeout.
	heldUntil := time.Now().Add(2 * time.Second)
	probes := 0
	for time.Now().Before(heldUntil) {
		p := probeMember(t, hc, c.url(follower), "db")
		check(p)
		if p.ready == http.StatusOK || *p.stale.CaughtUp {
			t.Fatalf("while catch-up is held: %v, want not ready and caught_up false", p)
		}
		probes++
	}
	if probes < 2 {
		t.Fatalf("only %d probes while catch-up was held", probes)
	}
	if _, ok := c.members[follower].Shard(1).Leader(); !ok {
		t.Fatal("the restarted member knows no leader while held: the probes proved nothing")
	}
	// A watch resuming at the grant, past what this member applied but
	// not past the log's end, is accepted and waits for it to catch up.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := url.Values{"resource": {"db"}, "start": {api.FormatWatchStart(map[int]uint64{1: grantIndex})}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url(follower)+api.PathWatch+"?"+q.Encode(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("watch from the grant while held: %v %v", resp, err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() {
		t.Fatalf("watch from the grant while held: no header: %v", lines.Err())
	}
	close(release)
	var m api.WatchMessage
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &m) != nil || m.Index != grantIndex ||
		len(m.Events) == 0 || m.Events[0].Kind != "grant" {
		t.Fatalf("watch from the grant after release: line %q %v, want the grant at %d", lines.Text(), lines.Err(), grantIndex)
	}
	waitFor(t, func() bool {
		p := probeMember(t, hc, c.url(follower), "db")
		check(p)
		return p.ready == http.StatusOK && *p.stale.CaughtUp
	})
}

// watchLines opens a watch of query on base and returns its lines once
// the header (the watch's start) has come.
func watchLines(t *testing.T, base string, query url.Values) *bufio.Scanner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+api.PathWatch+"?"+query.Encode(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("watch %v: %v %v", query, resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() {
		t.Fatalf("watch %v: no header: %v", query, lines.Err())
	}
	return lines
}

// nextWatchMessage reads the next message of a watch, within 10 s.
func nextWatchMessage(t *testing.T, lines *bufio.Scanner) api.WatchMessage {
	t.Helper()
	got := make(chan api.WatchMessage, 1)
	go func() {
		var m api.WatchMessage
		if lines.Scan() && json.Unmarshal(lines.Bytes(), &m) == nil {
			got <- m
		}
		close(got)
	}()
	select {
	case m, ok := <-got:
		if !ok || m.Index == 0 || len(m.Events) == 0 {
			t.Fatalf("watch message: %+v (ok %v, %v)", m, ok, lines.Err())
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no watch message within 10s")
	}
	return api.WatchMessage{}
}
