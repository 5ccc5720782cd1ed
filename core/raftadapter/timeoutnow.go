package raftadapter

import (
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// TimeoutNow (the last step of a leadership transfer) waits for its answer
// at most t.bound. hashicorp/raft (v1.7.2) refuses new entries until that
// RPC returns, long after the transfer itself timed out: with the
// transport's own timeout (5 s in lockd and the simulator), one lost
// TimeoutNow stalls the group for 5 s. Giving up early is safe: the
// target, if it got the request, starts its election anyway and this
// leader steps down on the new term.
func (t groupTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	if t.bound <= 0 {
		return t.Transport.TimeoutNow(id, target, args, resp)
	}
	var out raft.TimeoutNowResponse
	// Buffered: the call left behind finishes on its own timeout.
	done := make(chan error, 1)
	go func() { done <- t.Transport.TimeoutNow(id, target, args, &out) }()
	timer := time.NewTimer(t.bound)
	defer timer.Stop()
	select {
	case err := <-done:
		if err == nil {
			*resp = out
		}
		return err
	case <-timer.C:
		return fmt.Errorf("TimeoutNow to %s: no answer within %s", target, t.bound)
	}
}
