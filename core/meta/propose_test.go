package meta_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/meta"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/raftadapter"
)

// forwardFails answers the first forward with first and every later one
// with rest.
type forwardFails struct {
	first, rest error
	calls       atomic.Int64
}

var _ node.Forwarder = (*forwardFails)(nil)

func (f *forwardFails) Forward(context.Context, node.Peer, []byte) ([]byte, error) {
	if f.calls.Add(1) == 1 {
		return nil, f.first
	}
	return nil, f.rest
}

// TestProposeReportsAnUnknownOutcome: goal — a follower one of whose
// forwards may have reached the leader (its answer was lost) ends with an
// unknown outcome when its deadline passes, even if its later forwards
// surely were not sent; one whose every forward was refused before any
// log took it does not. Method: a 3-member group, a follower's forwarder
// failing each way, Propose with a short deadline.
func TestProposeReportsAnUnknownOutcome(t *testing.T) {
	lost := errors.New("connection lost before the reply")
	notSent := fmt.Errorf("%w: not sent", node.ErrUnavailable)
	for _, tc := range []struct {
		name        string
		first, rest error
		want        error
		notWant     error
	}{
		{"answer lost, then not sent", lost, notSent, node.ErrIndeterminate, nil},
		{"refused by a non-leader, then not sent", node.ErrNotLeader, notSent, context.DeadlineExceeded, node.ErrIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			groups := startGroups(t, 3, &forwardFails{first: tc.first, rest: tc.rest})
			var follower *meta.Group
			deadline := time.Now().Add(10 * time.Second)
			for follower == nil && time.Now().Before(deadline) {
				for _, g := range groups {
					if !g.IsLeader() && g.Leader() != "" {
						follower = g
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			if follower == nil {
				t.Fatal("no follower that knows a leader")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err := follower.Propose(ctx, meta.Command{Op: meta.OpSetShards, Shards: 1})
			if !errors.Is(err, tc.want) || tc.notWant != nil && errors.Is(err, tc.notWant) {
				t.Fatalf("Propose = %v, want %v and not %v", err, tc.want, tc.notWant)
			}
		})
	}
}

// startGroups starts an n-member metadata group over raft's in-memory
// transport, every member forwarding with fwd.
func startGroups(t *testing.T, n int, fwd node.Forwarder) []*meta.Group {
	t.Helper()
	var peers []node.Peer
	var trans []*raft.InmemTransport
	for i := range n {
		id := fmt.Sprintf("m%d", i+1)
		peers = append(peers, node.Peer{ID: id, RaftAddr: id})
		_, tr := raft.NewInmemTransport(raft.ServerAddress(id))
		trans = append(trans, tr)
	}
	for i := range trans {
		for j := range trans {
			if i != j {
				trans[i].Connect(raft.ServerAddress(peers[j].ID), trans[j])
			}
		}
	}
	var groups []*meta.Group
	for i := range n {
		g, err := meta.NewGroup(meta.GroupConfig{ID: peers[i].ID, Peers: peers, Bootstrap: true,
			Transport: trans[i], Stores: raftadapter.NewMemStores(), Forwarder: fwd})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Shutdown() })
		groups = append(groups, g)
	}
	return groups
}
