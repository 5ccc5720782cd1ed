package service

import (
	"context"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// Following an acquire's place in its queue, for a front end that reports
// it while the acquire waits (gRPC AcquireStream).

// OnQueued returns ctx whose Acquire reports, once, the lease id and
// queue position its request got when it queued; fn must not block.
func OnQueued(ctx context.Context, fn func(id lock.LeaseID, position int)) context.Context {
	return node.OnQueued(ctx, fn)
}

// QueuePosition is id's 1-based place in resource's queue as this member
// has applied it, 0 when it is not queued here.
func (s *Service) QueuePosition(resource string, id lock.LeaseID) int {
	n, _, err := s.host.For(resource)
	if err != nil {
		return 0
	}
	for i, w := range n.LocalStatus(resource).Queue {
		if w.ID == id {
			return i + 1
		}
	}
	return 0
}
