package raftlink

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/link"
)

// counter is a minimal FSM: the sum of the applied uint64s.
type counter struct {
	mu  sync.Mutex
	sum uint64
}

func (c *counter) Apply(l *raft.Log) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sum += binary.BigEndian.Uint64(l.Data)
	return c.sum
}

func (c *counter) value() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sum
}

func (c *counter) Snapshot() (raft.FSMSnapshot, error) {
	return counterSnapshot(c.value()), nil
}

func (c *counter) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var b [8]byte
	if _, err := io.ReadFull(rc, b[:]); err != nil {
		return err
	}
	c.mu.Lock()
	c.sum = binary.BigEndian.Uint64(b[:])
	c.mu.Unlock()
	return nil
}

type counterSnapshot uint64

func (s counterSnapshot) Persist(sink raft.SnapshotSink) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(s))
	if _, err := sink.Write(b[:]); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (counterSnapshot) Release() {}

// member is one process: a TCP link and the Raft groups on it.
type member struct {
	addr  string
	link  *link.TCP
	net   *Net
	rafts []*raft.Raft
	fsms  []*counter
}

// startLinks binds n members' listeners and starts their links.
func startLinks(t *testing.T, n int) []*member {
	t.Helper()
	streams := make(map[string]string)
	var mu sync.Mutex
	var ms []*member
	for range n {
		conns, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		str, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		streams[conns.Addr().String()] = str.Addr().String()
		mu.Unlock()
		cfg := link.DefaultTCPConfig()
		cfg.Local, cfg.Conns, cfg.Streams = conns.Addr().String(), conns, str
		cfg.Dial = func(ctx context.Context, addr string, stream bool) (net.Conn, error) {
			if stream {
				mu.Lock()
				addr = streams[addr]
				mu.Unlock()
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
		l, err := link.NewTCP(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rn, err := New(l, DefaultConfig(conns.Addr().String()))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, &member{addr: conns.Addr().String(), link: l, net: rn})
	}
	return ms
}

// startGroup starts group g on every member, bootstrapped with all of them.
func startGroup(t *testing.T, ms []*member, g uint64) {
	t.Helper()
	var servers []raft.Server
	for i, m := range ms {
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprint(i)), Address: raft.ServerAddress(m.addr)})
	}
	for i, m := range ms {
		conf := raft.DefaultConfig()
		conf.LocalID = raft.ServerID(fmt.Sprint(i))
		conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 200*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
		conf.SnapshotThreshold, conf.TrailingLogs = 20, 5
		conf.CommitTimeout = 5 * time.Millisecond
		conf.LogOutput = io.Discard
		trans, err := m.net.Transport(g)
		if err != nil {
			t.Fatal(err)
		}
		logs, snaps := raft.NewInmemStore(), raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(conf, logs, logs, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		f := &counter{}
		r, err := raft.NewRaft(conf, f, logs, logs, snaps, trans)
		if err != nil {
			t.Fatal(err)
		}
		m.rafts = append(m.rafts, r)
		m.fsms = append(m.fsms, f)
	}
}

func leaderOf(t *testing.T, ms []*member, g int) *raft.Raft {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, m := range ms {
			if m.rafts[g].State() == raft.Leader {
				return m.rafts[g]
			}
		}
	}
	t.Fatalf("group %d elected no leader", g)
	return nil
}

func add(r *raft.Raft, v uint64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return r.Apply(b[:], 5*time.Second).Error()
}

// TestRaftGroupsShareTheLink: goal — several Raft groups elect, replicate
// and commit over one link per member pair, and a member that returns
// empty after the leader compacted its log catches up by a snapshot
// streamed over the link. Method: 3 members, 2 groups; stop one follower's
// raft of group 0, apply past a snapshot, start it again on empty stores
// and wait for it to reach the leader's sum.
func TestRaftGroupsShareTheLink(t *testing.T) {
	ms := startLinks(t, 3)
	startGroup(t, ms, 0)
	startGroup(t, ms, 1)
	defer func() {
		for _, m := range ms {
			for _, r := range m.rafts {
				_ = r.Shutdown().Error()
			}
			_ = m.link.Close()
		}
	}()
	for g := 0; g < 2; g++ {
		lead := leaderOf(t, ms, g)
		for i := 1; i <= 10; i++ {
			if err := add(lead, uint64(i*(g+1))); err != nil {
				t.Fatalf("group %d apply: %v", g, err)
			}
		}
	}
	waitSum := func(f *counter, want uint64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if f.value() == want {
				return
			}
		}
		t.Fatalf("sum %d, want %d", f.value(), want)
	}
	for _, m := range ms {
		waitSum(m.fsms[0], 55)
		waitSum(m.fsms[1], 110)
	}

	// A follower of group 0 loses its state and comes back empty: the
	// leader has compacted its log, so only a snapshot can catch it up.
	lead := leaderOf(t, ms, 0)
	var lagging *member
	var slot int
	for i, m := range ms {
		if m.rafts[0] != lead {
			lagging, slot = m, i
			break
		}
	}
	if err := lagging.rafts[0].Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 50; i++ {
		if err := add(lead, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := lead.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(fmt.Sprint(slot))
	conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 200*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
	conf.LogOutput = io.Discard
	trans, err := lagging.net.Transport(0)
	if err != nil {
		t.Fatal(err)
	}
	logs, snaps := raft.NewInmemStore(), raft.NewInmemSnapshotStore()
	f := &counter{}
	r, err := raft.NewRaft(conf, f, logs, logs, snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
	lagging.rafts[0], lagging.fsms[0] = r, f
	waitSum(f, 105)
	if got, err := snaps.List(); err != nil || len(got) == 0 {
		t.Fatalf("the returning member caught up without a snapshot (%v, %v)", got, err)
	}
}

// TestCloseWaitsForHeartbeats: goal — once Close returns, no heartbeat
// handler of the group runs or starts: its owner closes the raft's stores
// next, and a handler still writing the term there panics ("store
// closed", seen when a member restarted). Method: a handler that blocks;
// Close must wait for it, and a heartbeat after Close is refused.
func TestCloseWaitsForHeartbeats(t *testing.T) {
	n := &Net{cfg: DefaultConfig("a"), groups: make(map[uint64]*Transport)}
	tr, err := n.Transport(1)
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	calls := 0
	tr.SetHeartbeatHandler(func(raft.RPC) { calls++; close(entered); <-release })
	hb := raft.RPC{Command: &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("b")}, Term: 1}}
	go tr.dispatch(context.Background(), hb)
	<-entered
	closed := make(chan struct{})
	go func() { _ = tr.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a heartbeat handler ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-closed
	if tr.dispatch(context.Background(), hb) || calls != 1 {
		t.Fatalf("a heartbeat after Close was handled (%d calls)", calls)
	}
}
