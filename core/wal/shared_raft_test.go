package wal_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstep/lockstep/core/wal"
)

// machine is one node's Shared log with a raft node per group on it.
type machine struct {
	dir   string
	sh    *wal.Shared
	nodes map[uint64]*raftNode
}

// sharedOpts uses small segments so raft's trims free and rewrite them.
var sharedOpts = wal.SharedOptions{SegmentBytes: 16 << 10, Logger: quiet}

func startMachine(t *testing.T, dir string, name string, groups []uint64) *machine {
	t.Helper()
	sh, err := wal.OpenShared(filepath.Join(dir, "wal"), sharedOpts)
	if err != nil {
		t.Fatalf("open %s shared log: %v", name, err)
	}
	m := &machine{dir: dir, sh: sh, nodes: map[uint64]*raftNode{}}
	for _, g := range groups {
		view, err := sh.Group(g)
		if err != nil {
			t.Fatal(err)
		}
		id := raft.ServerID(fmt.Sprintf("%s-g%d", name, g))
		m.nodes[g] = startNodeOn(t, id, filepath.Join(dir, fmt.Sprint(g)), view)
	}
	return m
}

// stop shuts the machine's raft nodes down and closes its shared log.
func (m *machine) stop(t *testing.T) {
	t.Helper()
	for _, n := range m.nodes {
		n.stop(t)
	}
	if err := m.sh.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRaftGroupsOnSharedLogs runs two raft groups of three members on
// three machines, each machine's two members writing one Shared log. Both
// groups commit at once (their writes share flushes); one machine
// restarts from disk while the groups keep committing, and must catch up;
// then all restart, elect leaders and commit again.
func TestRaftGroupsOnSharedLogs(t *testing.T) {
	groups := []uint64{1, 2}
	names := []string{"m0", "m1", "m2"}
	base := t.TempDir()
	machines := make([]*machine, len(names))
	for i, name := range names {
		machines[i] = startMachine(t, filepath.Join(base, name), name, groups)
	}
	defer func() {
		for _, m := range machines {
			if m != nil {
				for _, n := range m.nodes {
					_ = n.raft.Shutdown().Error()
				}
				_ = m.sh.Close()
			}
		}
	}()
	members := func(g uint64) []*raftNode {
		var out []*raftNode
		for _, m := range machines {
			out = append(out, m.nodes[g])
		}
		return out
	}
	for _, g := range groups {
		nodes := members(g)
		connect(nodes)
		var servers []raft.Server
		for _, n := range nodes {
			servers = append(servers, raft.Server{ID: n.id, Address: n.trans.LocalAddr()})
		}
		if err := nodes[0].raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
			t.Fatal(err)
		}
	}
	// applyAll commits from..to in every group at once.
	applyAll := func(from, to uint64) {
		var wg sync.WaitGroup
		for _, g := range groups {
			leader := leaderOf(t, members(g))
			wg.Add(1)
			go func() {
				defer wg.Done()
				applyRange(t, leader, from, to)
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		for _, g := range groups {
			waitApplied(t, members(g), to)
		}
	}
	applyAll(1, 600)
	if st := machines[0].sh.Stats(); st.Flushes >= st.Records {
		t.Errorf("m0: %d flushes for %d records; the groups never shared one", st.Flushes, st.Records)
	}

	// Restart m1 (whole machine) while the groups keep committing.
	m1 := machines[1]
	for _, g := range groups {
		for _, m := range machines {
			m.nodes[g].trans.Disconnect(m1.nodes[g].trans.LocalAddr())
		}
		m1.nodes[g].trans.DisconnectAll()
	}
	m1.stop(t)
	machines[1] = nil
	var wg sync.WaitGroup
	for _, g := range groups {
		leader := leaderOf(t, []*raftNode{machines[0].nodes[g], machines[2].nodes[g]})
		wg.Add(1)
		go func() {
			defer wg.Done()
			applyRange(t, leader, 601, 800)
		}()
	}
	wg.Wait()
	machines[1] = startMachine(t, m1.dir, names[1], groups)
	for _, g := range groups {
		connect(members(g))
	}
	for _, g := range groups {
		waitApplied(t, members(g), 800)
	}

	// Restart everything from disk.
	for i, m := range machines {
		m.stop(t)
		machines[i] = nil
	}
	for i, name := range names {
		machines[i] = startMachine(t, filepath.Join(base, name), name, groups)
	}
	for _, g := range groups {
		connect(members(g))
	}
	applyAll(801, 850)
	for i, m := range machines {
		t.Logf("%s: %+v", names[i], m.sh.Stats())
	}
}
