package maelstrom

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// memNet routes raft_rpc bodies between Transports in memory, through the
// same JSON encoding as the wire, and can isolate nodes (their messages are
// lost, so RPCs end in the caller's timeout, as under a partition).
type memNet struct {
	mu       sync.Mutex
	trans    map[string]*Transport
	isolated map[string]bool
	rpcs     map[string]int
}

type memCaller struct {
	net  *memNet
	from string
}

func (c memCaller) RPC(ctx context.Context, dest string, body any) (Message, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return Message{}, err
	}
	var req RaftRPC
	_ = json.Unmarshal(raw, &req)
	c.net.mu.Lock()
	c.net.rpcs[req.RPC]++
	lost := c.net.isolated[c.from] || c.net.isolated[dest]
	t := c.net.trans[dest]
	c.net.mu.Unlock()
	if lost || t == nil {
		<-ctx.Done()
		return Message{}, ctx.Err()
	}
	reply, err := t.Serve(ctx, Message{Src: c.from, Dest: dest, Body: raw})
	if err != nil {
		return Message{}, err
	}
	out, err := json.Marshal(reply)
	return Message{Src: dest, Dest: c.from, Body: out}, err
}

func (n *memNet) isolate(id string, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.isolated[id] = on
}

func (n *memNet) count(rpc string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rpcs[rpc]
}

// counterFSM counts applied commands; its snapshot is the count.
type counterFSM struct {
	mu sync.Mutex
	n  uint64
}

func (f *counterFSM) Apply(*raft.Log) interface{} { f.mu.Lock(); f.n++; f.mu.Unlock(); return nil }
func (f *counterFSM) get() uint64                 { f.mu.Lock(); defer f.mu.Unlock(); return f.n }
func (f *counterFSM) Snapshot() (raft.FSMSnapshot, error) {
	return counterSnap(f.get()), nil
}
func (f *counterFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var b [8]byte
	if _, err := io.ReadFull(rc, b[:]); err != nil {
		return err
	}
	f.mu.Lock()
	f.n = binary.BigEndian.Uint64(b[:])
	f.mu.Unlock()
	return nil
}

type counterSnap uint64

func (s counterSnap) Persist(sink raft.SnapshotSink) error {
	_, err := sink.Write(binary.BigEndian.AppendUint64(nil, uint64(s)))
	if err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}
func (counterSnap) Release() {}

// TestRaftOverMessages runs hashicorp/raft on the Maelstrom transport.
// Goal: elections, replication and InstallSnapshot all work when every RPC
// is a JSON message, and lost messages only delay. Method: three raft
// instances on an in-memory router; a follower is cut off while the leader
// commits enough to compact its log past the follower, then reconnected:
// it can only catch up by InstallSnapshot, which the router must have seen.
func TestRaftOverMessages(t *testing.T) {
	ids := []string{"n0", "n1", "n2"}
	net := &memNet{trans: map[string]*Transport{}, isolated: map[string]bool{}, rpcs: map[string]int{}}
	var servers []raft.Server
	for _, id := range ids {
		servers = append(servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(id)})
	}
	rafts := map[string]*raft.Raft{}
	fsms := map[string]*counterFSM{}
	for _, id := range ids {
		tr := NewTransport(memCaller{net: net, from: id}, id, TransportOptions{Group: "test", Timeout: 200 * time.Millisecond})
		net.mu.Lock()
		net.trans[id] = tr
		net.mu.Unlock()
		conf := raft.DefaultConfig()
		conf.LocalID = raft.ServerID(id)
		conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 100*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond
		conf.SnapshotThreshold, conf.TrailingLogs, conf.SnapshotInterval = 8, 2, 50*time.Millisecond
		conf.LogOutput = io.Discard
		store, snaps := raft.NewInmemStore(), raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(conf, store, store, snaps, tr, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		fsms[id] = &counterFSM{}
		r, err := raft.NewRaft(conf, fsms[id], store, store, snaps, tr)
		if err != nil {
			t.Fatal(err)
		}
		rafts[id] = r
		t.Cleanup(func() { _ = r.Shutdown().Error() })
	}
	leader := waitFor(t, "a leader", func() (string, bool) {
		for id, r := range rafts {
			if r.State() == raft.Leader {
				return id, true
			}
		}
		return "", false
	})
	apply := func(n int) {
		for range n {
			if err := rafts[leader].Apply([]byte("x"), 5*time.Second).Error(); err != nil {
				t.Fatalf("apply on %s: %v", leader, err)
			}
		}
	}
	apply(3)
	follower := ids[0]
	if follower == leader {
		follower = ids[1]
	}
	net.isolate(follower, true)
	apply(40)
	if err := rafts[leader].Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		t.Fatalf("snapshot: %v", err)
	}
	net.isolate(follower, false)
	waitFor(t, "the follower to catch up", func() (string, bool) { return "", fsms[follower].get() == 43 })
	if net.count(rpcInstallSnapshot) == 0 {
		t.Fatal("the follower caught up without InstallSnapshot; the log was not compacted past it")
	}
	if net.count(rpcAppendEntries) == 0 || net.count(rpcRequestVote)+net.count(rpcRequestPreVote) == 0 {
		t.Fatalf("rpcs seen: %v", net.rpcs)
	}
}

// TestTransportFailures checks the transport's refusals. Goal: an RPC
// whose reply never comes fails (raft retries), a closed transport says
// ErrTransportShutdown, and a too-large snapshot is refused before it is
// sent. Method: a router that drops everything.
func TestTransportFailures(t *testing.T) {
	net := &memNet{trans: map[string]*Transport{}, isolated: map[string]bool{"n1": true}, rpcs: map[string]int{}}
	tr := NewTransport(memCaller{net: net, from: "n0"}, "n0", TransportOptions{Timeout: 20 * time.Millisecond, MaxSnapshotBytes: 4})
	var resp raft.AppendEntriesResponse
	if err := tr.AppendEntries("n1", "n1", &raft.AppendEntriesRequest{Term: 1}, &resp); err == nil {
		t.Fatal("AppendEntries to a lost peer succeeded")
	}
	var snapResp raft.InstallSnapshotResponse
	err := tr.InstallSnapshot("n1", "n1", &raft.InstallSnapshotRequest{Size: 5}, &snapResp, nil)
	if err == nil || net.count(rpcInstallSnapshot) != 0 {
		t.Fatalf("oversized snapshot: err %v, sent %d", err, net.count(rpcInstallSnapshot))
	}
	_ = tr.Close()
	if err := tr.AppendEntries("n1", "n1", &raft.AppendEntriesRequest{Term: 1}, &resp); !errors.Is(err, raft.ErrTransportShutdown) {
		t.Fatalf("after Close: %v", err)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor[T any](t *testing.T, what string, cond func() (T, bool)) T {
	t.Helper()
	for range 1000 {
		if v, ok := cond(); ok {
			return v
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
	var zero T
	return zero
}
