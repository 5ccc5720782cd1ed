package raftadapter

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// rawRafts starts three raw rafts "a", "b", "c" on connected in-memory
// transports, each passed through wrap (nil: as is), with fsm(i) as state
// machines: fast timing, TrailingLogs 2 and snapshots only when asked, over
// KeepCompactionEdge stores, as lock groups keep them. stop shuts them down.
func rawRafts(t *testing.T, fsm func(i int) raft.FSM, wrap func(i int, tr raft.Transport) raft.Transport) (rafts []*raft.Raft, trans []*raft.InmemTransport, stop func()) {
	ids := []raft.ServerID{"a", "b", "c"}
	var conf raft.Configuration
	trans = make([]*raft.InmemTransport, len(ids))
	for i, id := range ids {
		_, trans[i] = raft.NewInmemTransport(raft.ServerAddress(id))
		conf.Servers = append(conf.Servers, raft.Server{ID: id, Address: raft.ServerAddress(id)})
	}
	for i := range trans {
		for j := range trans {
			if i != j {
				trans[i].Connect(raft.ServerAddress(ids[j]), trans[j])
			}
		}
	}
	rafts = make([]*raft.Raft, len(ids))
	for i, id := range ids {
		cfg := raft.DefaultConfig()
		cfg.LocalID = id
		cfg.HeartbeatTimeout, cfg.ElectionTimeout = 100*time.Millisecond, 100*time.Millisecond
		cfg.LeaderLeaseTimeout, cfg.CommitTimeout = 50*time.Millisecond, 5*time.Millisecond
		cfg.SnapshotThreshold, cfg.SnapshotInterval, cfg.TrailingLogs = 1<<40, time.Hour, 2
		cfg.LogLevel = "OFF"
		mem := raft.NewInmemStore()
		logs := KeepCompactionEdge(mem)
		snaps := newMemSnapshots()
		var tr raft.Transport = trans[i]
		if wrap != nil {
			tr = wrap(i, tr)
		}
		if err := raft.BootstrapCluster(cfg, logs, mem, snaps, tr, conf); err != nil {
			t.Fatal(err)
		}
		r, err := raft.NewRaft(cfg, fsm(i), logs, mem, snaps, tr)
		if err != nil {
			t.Fatal(err)
		}
		rafts[i] = r
	}
	return rafts, trans, func() {
		for _, r := range rafts {
			_ = r.Shutdown().Error()
		}
	}
}
