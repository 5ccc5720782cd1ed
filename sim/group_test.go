package sim

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"

	memberlink "github.com/lockstep/lockstep/core/link"
	"github.com/lockstep/lockstep/core/raftlink"
)

// raftMember puts node id on n as a member does: a MemberLink serving a
// raftlink.Net, with a transport per group.
func raftMember(t *testing.T, n *Network, id string, groups ...uint64) map[uint64]*raftlink.Transport {
	t.Helper()
	ml := n.NewMemberLink(id)
	links, err := raftlink.New(ml, n.RaftConfig(id))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[uint64]*raftlink.Transport)
	for _, g := range groups {
		tr, err := links.Transport(g)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tr.Close() })
		out[g] = tr
	}
	n.HandleMember(id, map[string]http.Handler{}, ml)
	return out
}

// serveOne answers the next RPC on tr with resp (or err), after letting f
// inspect it.
func serveOne(tr raft.Transport, resp any, err error, f func(raft.RPC)) {
	go func() {
		rpc := <-tr.Consumer()
		f(rpc)
		rpc.Respond(resp, err)
	}()
}

// Goal: several Raft groups share one node identity: an RPC of group g
// reaches only group g's transport at the target, and a fault on the node
// (here a partition) cuts every group alike, noticed at the RPC timeout.
// Method: groups 1 and 2 on nodes a and b; a vote request of group 2 must
// be answered by b's group 2 while b's group 1 sees nothing; after a
// partition both groups' RPCs fail as unreachable after exactly the
// network's RPCTimeout.
func TestGroupsShareMemberLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 200 * time.Millisecond
		n := NewNetwork(Options{Link: simLink, RPCTimeout: timeout})
		defer n.Close()
		a, b := raftMember(t, n, "a", 1, 2), raftMember(t, n, "b", 1, 2)
		if a[1].LocalAddr() != "a" || a[2].LocalAddr() != "a" {
			t.Fatalf("group transports advertise %q and %q, want the node id", a[1].LocalAddr(), a[2].LocalAddr())
		}
		serveOne(b[2], &raft.RequestVoteResponse{Term: 9, Granted: true}, nil, func(raft.RPC) {})
		var resp raft.RequestVoteResponse
		if err := a[2].RequestVote("b", "b", &raft.RequestVoteRequest{Term: 9}, &resp); err != nil || resp.Term != 9 || !resp.Granted {
			t.Fatalf("group 2 vote: %+v, %v", resp, err)
		}
		select {
		case rpc := <-b[1].Consumer():
			t.Fatalf("group 1 of b received group 2's %T", rpc.Command)
		default:
		}

		n.Partition([]string{"a"}, []string{"b"})
		for g, tr := range a {
			start := time.Now()
			err := tr.RequestVote("b", "b", &raft.RequestVoteRequest{Term: 10}, &resp)
			if !errors.Is(err, ErrUnreachable) || !errors.Is(err, memberlink.ErrNotSent) {
				t.Fatalf("group %d vote across a partition: %v, want unreachable and not sent", g, err)
			}
			if took := time.Since(start); took != timeout {
				t.Fatalf("group %d vote failed after %v, want the RPC timeout %v", g, took, timeout)
			}
		}
	})
}

// Goal: each failed RPC over the MemberLink returns its error when it
// should: a lost message at the RPC timeout (as the old simulator
// transport did), a closed group or local transport at once. Method: a
// table of faults, each timed in virtual time on a zero-latency network.
func TestRaftLinkFailures(t *testing.T) {
	const timeout = 700 * time.Millisecond
	tests := []struct {
		name  string
		setup func(n *Network, a, b *raftlink.Transport)
		want  func(error) bool
		took  time.Duration
	}{
		{"response lost", func(n *Network, _, _ *raftlink.Transport) { n.SetLink("b", "a", Link{DropRate: 1}) },
			func(err error) bool { return errors.Is(err, ErrTimeout) && !errors.Is(err, memberlink.ErrNotSent) }, timeout},
		{"target crashed", func(n *Network, _, _ *raftlink.Transport) { n.HandleMember("b", nil, nil) },
			func(err error) bool { return errors.Is(err, ErrUnreachable) && errors.Is(err, memberlink.ErrNotSent) }, timeout},
		{"target group closed", func(_ *Network, _, b *raftlink.Transport) { _ = b.Close() },
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "no group 1") }, 0},
		{"local transport closed", func(_ *Network, a, _ *raftlink.Transport) { _ = a.Close() },
			func(err error) bool { return errors.Is(err, raft.ErrTransportShutdown) }, 0},
		{"delivered", func(*Network, *raftlink.Transport, *raftlink.Transport) {},
			func(err error) bool { return err == nil }, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := NewNetwork(Options{RPCTimeout: timeout})
				defer n.Close()
				a, b := raftMember(t, n, "a", 1)[1], raftMember(t, n, "b", 1)[1]
				b.SetHeartbeatHandler(func(rpc raft.RPC) { rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil) })
				tc.setup(n, a, b)
				start := time.Now()
				var resp raft.AppendEntriesResponse
				err := a.AppendEntries("b", "b", &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("a")}, Term: 1}, &resp)
				if !tc.want(err) {
					t.Fatalf("unexpected error %v", err)
				}
				if took := time.Since(start); took != tc.took {
					t.Fatalf("took %v, want %v", took, tc.took)
				}
			})
		})
	}
}

// Goal: InstallSnapshot carries the snapshot over the MemberLink and
// raft's error text back. Method: the receiver reads the snapshot and
// answers with an error.
func TestRaftLinkInstallSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Options{Link: simLink})
		defer n.Close()
		a, b := raftMember(t, n, "a", 1)[1], raftMember(t, n, "b", 1)[1]
		data := "snapshot-bytes"
		serveOne(b, &raft.InstallSnapshotResponse{Term: 4}, errors.New("disk full"), func(rpc raft.RPC) {
			got, err := io.ReadAll(rpc.Reader)
			if err != nil || string(got) != data {
				t.Errorf("receiver read %q, %v", got, err)
			}
		})
		var resp raft.InstallSnapshotResponse
		err := a.InstallSnapshot("b", "b", &raft.InstallSnapshotRequest{Term: 4, Size: int64(len(data))}, &resp, strings.NewReader(data))
		if err == nil || err.Error() != "disk full" {
			t.Fatalf("got %+v, %v; want the remote error", resp, err)
		}
	})
}
