package sim

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"
)

// Goal: several Raft groups share one node identity: an RPC of group g
// reaches only group g's transport at the target, and a fault on the node
// (here a partition) cuts every group alike. Method: groups 1 and 2 on
// nodes a and b; a vote request of group 2 must be answered by b's group 2
// while b's group 1 sees nothing; after a partition both groups' RPCs fail.
func TestGroupTransportsShareNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Options{Link: simLink, RPCTimeout: 200 * time.Millisecond})
		defer n.Close()
		open := func(id string, g uint64) *Transport {
			tr, err := n.NewGroupTransport(id, g)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tr.Close() })
			return tr
		}
		a1, a2, b1, b2 := open("a", 1), open("a", 2), open("b", 1), open("b", 2)
		if _, err := n.NewGroupTransport("a", 2); err == nil {
			t.Fatal("a second open transport for a/2 was accepted")
		}
		if a1.LocalAddr() != "a" || a2.LocalAddr() != "a" {
			t.Fatalf("group transports advertise %q and %q, want the node id", a1.LocalAddr(), a2.LocalAddr())
		}
		serveOne(b2, &raft.RequestVoteResponse{Term: 9, Granted: true}, nil, func(raft.RPC) {})
		var resp raft.RequestVoteResponse
		if err := a2.RequestVote("b", "b", &raft.RequestVoteRequest{Term: 9}, &resp); err != nil || resp.Term != 9 {
			t.Fatalf("group 2 vote: %+v, %v", resp, err)
		}
		select {
		case rpc := <-b1.Consumer():
			t.Fatalf("group 1 of b received group 2's %T", rpc.Command)
		default:
		}

		n.Partition([]string{"a"}, []string{"b"})
		for _, tr := range []*Transport{a1, a2} {
			if err := tr.RequestVote("b", "b", &raft.RequestVoteRequest{Term: 10}, &resp); !errors.Is(err, ErrUnreachable) {
				t.Fatalf("group %d vote across a partition: %v, want unreachable", tr.group, err)
			}
		}
	})
}
