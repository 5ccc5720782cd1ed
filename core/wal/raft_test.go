package wal_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/lockstep/lockstep/core/wal"
)

// sumFSM adds up 8-byte big-endian commands; count and sum identify exactly
// which commands were applied, once each.
type sumFSM struct {
	mu         sync.Mutex
	count, sum uint64
}

func (f *sumFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand || len(l.Data) != 8 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count++
	f.sum += binary.BigEndian.Uint64(l.Data)
	return nil
}

func (f *sumFSM) state() (count, sum uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count, f.sum
}

func (f *sumFSM) Snapshot() (raft.FSMSnapshot, error) {
	count, sum := f.state()
	return sumSnapshot{count, sum}, nil
}

func (f *sumFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var b [16]byte
	if _, err := io.ReadFull(rc, b[:]); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count, f.sum = binary.BigEndian.Uint64(b[:]), binary.BigEndian.Uint64(b[8:])
	return nil
}

type sumSnapshot struct{ count, sum uint64 }

func (s sumSnapshot) Persist(sink raft.SnapshotSink) error {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:], s.count)
	binary.BigEndian.PutUint64(b[8:], s.sum)
	if _, err := sink.Write(b[:]); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (sumSnapshot) Release() {}

// raftNode is one cluster member whose log and stable store is a wal.Store.
type raftNode struct {
	id    raft.ServerID
	dir   string
	store logStore
	trans *raft.InmemTransport
	fsm   *sumFSM
	raft  *raft.Raft
}

// walOpts compacts after a few KiB so raft's snapshots exercise rewrites.
var walOpts = wal.Options{CompactMinDeadBytes: 4 << 10, Logger: quiet}

func startNode(t *testing.T, id raft.ServerID, dir string) *raftNode {
	t.Helper()
	store, err := wal.Open(dir, walOpts)
	if err != nil {
		t.Fatalf("open %s store: %v", id, err)
	}
	return startNodeOn(t, id, dir, store)
}

// startNodeOn starts a node on store, keeping snapshots in dir.
func startNodeOn(t *testing.T, id raft.ServerID, dir string, store logStore) *raftNode {
	t.Helper()
	logger := hclog.New(&hclog.LoggerOptions{Name: string(id), Output: io.Discard})
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logger)
	if err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(id))
	conf := raft.DefaultConfig()
	conf.LocalID = id
	conf.Logger = logger
	// Generous timeouts: on a loaded 2-core machine short ones depose the
	// leader mid-batch, and an apply whose leadership was lost has an
	// unknown outcome this counting FSM cannot judge.
	conf.HeartbeatTimeout = time.Second
	conf.ElectionTimeout = time.Second
	conf.LeaderLeaseTimeout = 500 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	// Snapshot and trim often so DeleteRange and compaction run for real.
	conf.SnapshotThreshold = 128
	conf.SnapshotInterval = 100 * time.Millisecond
	conf.TrailingLogs = 64
	n := &raftNode{id: id, dir: dir, store: store, trans: trans, fsm: &sumFSM{}}
	if n.raft, err = raft.NewRaft(conf, n.fsm, store, store, snaps, trans); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	return n
}

func (n *raftNode) stop(t *testing.T) {
	t.Helper()
	if err := n.raft.Shutdown().Error(); err != nil {
		t.Fatalf("shutdown %s: %v", n.id, err)
	}
	n.trans.DisconnectAll()
	if err := n.store.Close(); err != nil {
		t.Fatalf("close %s store: %v", n.id, err)
	}
}

func connect(nodes []*raftNode) {
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				a.trans.Connect(b.trans.LocalAddr(), b.trans)
			}
		}
	}
}

// waitFor polls cond every 10ms until it holds or timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out after %v waiting for %s", timeout, what)
}

func leaderOf(t *testing.T, nodes []*raftNode) *raftNode {
	t.Helper()
	var leader *raftNode
	waitFor(t, "a leader", 10*time.Second, func() bool {
		for _, n := range nodes {
			if n.raft.State() == raft.Leader {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

// applyRange proposes commands from..to concurrently and waits for all.
func applyRange(t *testing.T, leader *raftNode, from, to uint64) {
	t.Helper()
	futures := make([]raft.ApplyFuture, 0, to-from+1)
	for v := from; v <= to; v++ {
		cmd := binary.BigEndian.AppendUint64(nil, v)
		futures = append(futures, leader.raft.Apply(cmd, 10*time.Second))
	}
	for i, f := range futures {
		if err := f.Error(); err != nil {
			t.Fatalf("apply %d: %v", from+uint64(i), err)
		}
	}
}

func waitApplied(t *testing.T, nodes []*raftNode, upTo uint64) {
	t.Helper()
	wantSum := upTo * (upTo + 1) / 2
	for _, n := range nodes {
		waitFor(t, fmt.Sprintf("%s to apply 1..%d", n.id, upTo), 20*time.Second, func() bool {
			count, sum := n.fsm.state()
			return count == upTo && sum == wantSum
		})
	}
}

// TestRaftCluster runs three raft nodes on wal stores over the in-memory
// transport: it commits 1,000 commands, restarts a follower on its
// directory (its recovered log must equal what it had, and it must catch
// up on commands sent while it was down), then restarts the whole cluster
// from disk and checks it elects a leader and keeps committing.
func TestRaftCluster(t *testing.T) {
	ids := []raft.ServerID{"n0", "n1", "n2"}
	base := t.TempDir()
	nodes := make([]*raftNode, len(ids))
	var servers []raft.Server
	for i, id := range ids {
		nodes[i] = startNode(t, id, filepath.Join(base, string(id)))
		servers = append(servers, raft.Server{ID: id, Address: raft.ServerAddress(id)})
	}
	defer func() {
		for _, n := range nodes {
			if n != nil {
				_ = n.raft.Shutdown().Error()
				_ = n.store.Close()
			}
		}
	}()
	connect(nodes)
	if err := nodes[0].raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		t.Fatal(err)
	}
	applyRange(t, leaderOf(t, nodes), 1, 1000)
	waitApplied(t, nodes, 1000)

	// Restart a follower; the rest keep committing while it is down.
	leader := leaderOf(t, nodes)
	fi := 0
	for nodes[fi] == leader {
		fi++
	}
	f := nodes[fi]
	if err := f.raft.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	firstBefore, _ := f.store.FirstIndex()
	lastBefore, _ := f.store.LastIndex()
	termBefore, err := f.store.GetUint64([]byte("CurrentTerm"))
	if err != nil || termBefore == 0 {
		t.Fatalf("follower term before restart = %d, %v", termBefore, err)
	}
	var beforeLogs []raft.Log
	for idx := firstBefore; idx <= lastBefore && idx > 0; idx++ {
		var l raft.Log
		if err := f.store.GetLog(idx, &l); err != nil {
			t.Fatalf("GetLog(%d) before restart: %v", idx, err)
		}
		beforeLogs = append(beforeLogs, l)
	}
	for _, n := range nodes {
		n.trans.Disconnect(f.trans.LocalAddr())
	}
	f.trans.DisconnectAll()
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	nodes[fi] = nil
	applyRange(t, leader, 1001, 1200)

	reopened, err := wal.Open(f.dir, walOpts)
	if err != nil {
		t.Fatalf("reopen follower store: %v", err)
	}
	first, _ := reopened.FirstIndex()
	last, _ := reopened.LastIndex()
	term, _ := reopened.GetUint64([]byte("CurrentTerm"))
	if first != firstBefore || last != lastBefore || term != termBefore {
		t.Fatalf("recovered log [%d,%d] term %d, had [%d,%d] term %d", first, last, term, firstBefore, lastBefore, termBefore)
	}
	for _, want := range beforeLogs {
		var got raft.Log
		if err := reopened.GetLog(want.Index, &got); err != nil || !sameLog(&got, &want) {
			t.Fatalf("recovered GetLog(%d) = %+v, %v; want %+v", want.Index, got, err, want)
		}
	}
	if err := reopened.Close(); err != nil {
		t.Fatal(err)
	}
	nodes[fi] = startNode(t, f.id, f.dir)
	connect(nodes)
	waitApplied(t, nodes, 1200)

	// Restart everything from disk.
	for i, n := range nodes {
		n.stop(t)
		nodes[i] = nil
	}
	for i, id := range ids {
		nodes[i] = startNode(t, id, filepath.Join(base, string(id)))
	}
	connect(nodes)
	applyRange(t, leaderOf(t, nodes), 1201, 1210)
	waitApplied(t, nodes, 1210)
}
