package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/forward"
	"github.com/lockstep/lockstep/core/node"
)

// kvReplica is one member of the lin-kv Raft group. core/node is the lock
// state machine and nothing else, so the register workload gets its own
// small replica: hashicorp/raft with kvFSM, over the same Maelstrom link,
// forwarding (core/forward) and error mapping as the lock group. Every
// operation, reads included, goes through the log, so every answer is
// linearizable.
type kvReplica struct {
	id   string
	raft *raft.Raft
	fwd  node.Forwarder
	// proposeTimeout bounds a forwarded command on this leader, as
	// node.Config.ProposeTimeout does the lock group's: core/forward gives
	// it no deadline of the forwarding member's.
	proposeTimeout time.Duration
}

var _ forward.Group = (*kvReplica)(nil)

// retryDelay is how long a proposer waits for a leader to appear.
const retryDelay = 10 * time.Millisecond

func newKVReplica(id string, peers []string, trans raft.Transport, fwd node.Forwarder, t Timing, proposeTimeout time.Duration) (*kvReplica, error) {
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(id)
	conf.HeartbeatTimeout = t.Heartbeat
	conf.ElectionTimeout = t.Election
	conf.LeaderLeaseTimeout = t.LeaderLease
	conf.CommitTimeout = 5 * time.Millisecond
	conf.SnapshotThreshold = t.SnapshotThreshold
	conf.TrailingLogs = t.TrailingLogs
	conf.SnapshotInterval = t.SnapshotInterval
	conf.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft-kv-" + id, Output: t.RaftLogs, Level: hclog.Warn})
	store := raft.NewInmemStore()
	snaps := raft.NewInmemSnapshotStore()
	var servers []raft.Server
	for _, p := range peers {
		servers = append(servers, raft.Server{ID: raft.ServerID(p), Address: raft.ServerAddress(p)})
	}
	if err := raft.BootstrapCluster(conf, store, store, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
		return nil, fmt.Errorf("bootstrap kv group: %w", err)
	}
	r, err := raft.NewRaft(conf, newKVFSM(), store, store, snaps, trans)
	if err != nil {
		return nil, fmt.Errorf("start kv raft: %w", err)
	}
	return &kvReplica{id: id, raft: r, fwd: fwd, proposeTimeout: proposeTimeout}, nil
}

func (r *kvReplica) shutdown() error { return r.raft.Shutdown().Error() }

// do gets cmd applied by the current leader, from any member. Like
// core/node's propose it retries only while the command surely was not
// proposed (no leader yet, or refused by a non-leader), so a retry never
// applies a command twice; when ctx ends during such retries the answer is
// node.ErrUnavailable, and any other failure is node.ErrIndeterminate.
func (r *kvReplica) do(ctx context.Context, cmd kvCommand) (kvResult, error) {
	b, err := json.Marshal(cmd)
	if err != nil {
		return kvResult{}, fmt.Errorf("encode command: %w", err)
	}
	for {
		if r.raft.State() == raft.Leader {
			res, err := r.applyLocal(ctx, b)
			if !errors.Is(err, node.ErrNotLeader) {
				return res, err
			}
		} else if addr, id := r.raft.LeaderWithID(); id != "" && string(id) != r.id {
			out, err := r.fwd.Forward(ctx, node.Peer{ID: string(id), RaftAddr: string(addr)}, b)
			if err == nil {
				var res kvResult
				if err := json.Unmarshal(out, &res); err != nil {
					return kvResult{}, fmt.Errorf("%w: leader reply: %w", node.ErrIndeterminate, err)
				}
				return res, nil
			}
			if !errors.Is(err, node.ErrNotLeader) && !errors.Is(err, node.ErrUnavailable) {
				return kvResult{}, fmt.Errorf("%w: forward to %s: %w", node.ErrIndeterminate, id, err)
			}
		}
		t := time.NewTimer(retryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return kvResult{}, fmt.Errorf("%w: %w", node.ErrUnavailable, ctx.Err())
		case <-t.C:
		}
	}
}

// applyLocal appends b on this leader and waits for it to apply.
func (r *kvReplica) applyLocal(ctx context.Context, b []byte) (kvResult, error) {
	timeout := time.Duration(0)
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return kvResult{}, fmt.Errorf("%w: deadline passed before proposing", node.ErrUnavailable)
		}
	}
	f := r.raft.Apply(b, timeout)
	if err := f.Error(); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader):
			return kvResult{}, node.ErrNotLeader
		case errors.Is(err, raft.ErrEnqueueTimeout):
			return kvResult{}, fmt.Errorf("%w: %w", node.ErrUnavailable, err)
		default:
			return kvResult{}, fmt.Errorf("%w: %w", node.ErrIndeterminate, err)
		}
	}
	res, ok := f.Response().(kvResult)
	if !ok {
		return kvResult{}, fmt.Errorf("%w: unexpected apply response %T", node.ErrIndeterminate, f.Response())
	}
	return res, nil
}

// ServeForward implements forward.Group: it applies a command forwarded
// by another member, refusing with node.ErrNotLeader unless this node
// leads. Its errors are applyLocal's, classified as core/node's.
func (r *kvReplica) ServeForward(ctx context.Context, b []byte) ([]byte, error) {
	if r.raft.State() != raft.Leader {
		return nil, node.ErrNotLeader
	}
	ctx, cancel := context.WithTimeout(ctx, r.proposeTimeout)
	defer cancel()
	res, err := r.applyLocal(ctx, b)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}
