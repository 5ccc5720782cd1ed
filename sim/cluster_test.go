package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/raftlink"
)

// listFSM is a trivial state machine: the list of applied commands.
type listFSM struct {
	mu      sync.Mutex
	applied []string
}

func (f *listFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, string(l.Data))
	return len(f.applied)
}

func (f *listFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return listSnapshot(slices.Clone(f.applied)), nil
}

func (f *listFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var applied []string
	if err := json.NewDecoder(rc).Decode(&applied); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = applied
	return nil
}

func (f *listFSM) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.applied)
}

type listSnapshot []string

func (s listSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode([]string(s)); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (listSnapshot) Release() {}

// testNode is one raft server and the durable state it keeps across restarts.
type testNode struct {
	id    string
	store *raft.InmemStore
	snaps *raft.InmemSnapshotStore
	fsm   *listFSM
	links *raftlink.Net
	raft  *raft.Raft
}

// cluster is a set of raft servers on one Network.
type cluster struct {
	t     *testing.T
	net   *Network
	ids   []string
	nodes map[string]*testNode
}

// newCluster bootstraps and starts one raft server per id on net and shuts
// them all down, then closes net, when the test ends.
func newCluster(t *testing.T, net *Network, ids ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, net: net, ids: ids, nodes: make(map[string]*testNode)}
	var servers []raft.Server
	for _, id := range ids {
		servers = append(servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(id)})
	}
	for _, id := range ids {
		n := &testNode{id: id, store: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore(), fsm: &listFSM{}}
		if err := raft.BootstrapCluster(raftConfig(id), n.store, n.store, n.snaps, nil, raft.Configuration{Servers: servers}); err != nil {
			t.Fatalf("bootstrap %s: %v", id, err)
		}
		c.nodes[id] = n
		c.start(id)
	}
	t.Cleanup(c.shutdown)
	return c
}

func raftConfig(id string) *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(id)
	conf.Logger = hclog.NewNullLogger()
	return conf
}

// start runs a fresh raft instance for id over the node's stores, on a
// fresh member link, as a restarted process would.
func (c *cluster) start(id string) {
	c.t.Helper()
	n := c.nodes[id]
	ml := c.net.NewMemberLink(id)
	links, err := raftlink.New(ml, c.net.RaftConfig(id))
	if err != nil {
		c.t.Fatalf("raftlink %s: %v", id, err)
	}
	trans, err := links.Transport(0)
	if err != nil {
		c.t.Fatalf("transport %s: %v", id, err)
	}
	c.net.HandleMember(id, map[string]http.Handler{}, ml)
	r, err := raft.NewRaft(raftConfig(id), n.fsm, n.store, n.store, n.snaps, trans)
	if err != nil {
		c.t.Fatalf("raft %s: %v", id, err)
	}
	n.links, n.raft = links, r
}

// stop shuts id's raft down, which also closes its transport, and takes
// the node off the network.
func (c *cluster) stop(id string) {
	n := c.nodes[id]
	if n.raft == nil {
		return
	}
	if err := n.raft.Shutdown().Error(); err != nil {
		c.t.Errorf("shutdown %s: %v", id, err)
	}
	c.net.HandleMember(id, nil, nil)
	n.raft = nil
}

func (c *cluster) shutdown() {
	for _, id := range c.ids {
		c.stop(id)
	}
	c.net.Close()
}

// leaders returns the running nodes among ids that believe they lead.
func (c *cluster) leaders(ids []string) []string {
	var out []string
	for _, id := range ids {
		if r := c.nodes[id].raft; r != nil && r.State() == raft.Leader {
			out = append(out, id)
		}
	}
	return out
}

// waitLeader polls in virtual time until exactly one node among ids leads and
// every running node among ids names it as leader.
func (c *cluster) waitLeader(ids []string, within time.Duration) string {
	c.t.Helper()
	const poll = 50 * time.Millisecond
	for range int(within / poll) {
		if l := c.leaders(ids); len(l) == 1 && c.agree(ids, l[0]) {
			return l[0]
		}
		time.Sleep(poll)
	}
	c.t.Fatalf("no single agreed leader among %v within %v (leaders %v)", ids, within, c.leaders(ids))
	return ""
}

func (c *cluster) agree(ids []string, leader string) bool {
	for _, id := range ids {
		if r := c.nodes[id].raft; r != nil {
			if _, lid := r.LeaderWithID(); string(lid) != leader {
				return false
			}
		}
	}
	return true
}

// waitApplied polls until every running node among ids has applied want.
func (c *cluster) waitApplied(ids []string, want []string, within time.Duration) {
	c.t.Helper()
	const poll = 50 * time.Millisecond
	for range int(within / poll) {
		done := true
		for _, id := range ids {
			if got := c.nodes[id].fsm.list(); !slices.Equal(got, want) {
				done = false
			}
		}
		if done {
			return
		}
		time.Sleep(poll)
	}
	for _, id := range ids {
		c.t.Errorf("%s applied %v, want %v", id, c.nodes[id].fsm.list(), want)
	}
	c.t.FailNow()
}

// waitConverged polls until every running node among ids has applied the
// same non-empty list and returns it.
func (c *cluster) waitConverged(ids []string, within time.Duration) []string {
	c.t.Helper()
	const poll = 50 * time.Millisecond
	for range int(within / poll) {
		first := c.nodes[ids[0]].fsm.list()
		same := len(first) > 0
		for _, id := range ids[1:] {
			same = same && slices.Equal(c.nodes[id].fsm.list(), first)
		}
		if same {
			return first
		}
		time.Sleep(poll)
	}
	c.t.Fatalf("nodes %v did not converge within %v", ids, within)
	return nil
}

func (c *cluster) apply(id, cmd string) error {
	if err := c.nodes[id].raft.Apply([]byte(cmd), 5*time.Second).Error(); err != nil {
		return fmt.Errorf("apply %q on %s: %w", cmd, id, err)
	}
	return nil
}

func without(ids []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == drop })
}
