package grpcapi

import (
	"context"
	"fmt"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/service"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// queuedAt is what node.OnQueued reports.
type queuedAt struct {
	id       lock.LeaseID
	position int
}

// acquireOutcome is the end of the acquire behind a stream.
type acquireOutcome struct {
	out api.AcquireResponse
	err error
}

// AcquireStream implements lockstepv1.LockServer: the acquire runs as the
// unary one does, on its own goroutine, while this one reports the queue
// position each time an applied entry moves it. The stream's context is
// the acquire's: when the caller cancels, the node removes the request
// from the queue through the log (node.Acquire's give-up), and the handler
// returns only after that, so no wait outlives its stream.
func (s *Service) AcquireStream(in *lockstepv1.AcquireRequest, stream lockstepv1.Lock_AcquireStreamServer) error {
	done, err := s.svc.Admit()
	if err != nil {
		return toStatus(err)
	}
	defer done()
	req, err := acquireRequest(in)
	if err != nil {
		return toStatus(err)
	}
	// Watch before proposing, so no change after the enqueue is missed.
	changed, stop := s.changes.Watch(req.Resource)
	defer stop()
	queued := make(chan queuedAt, 1)
	ctx := service.OnQueued(stream.Context(), func(id lock.LeaseID, position int) {
		select {
		case queued <- queuedAt{id: id, position: position}:
		default: // Acquire reports once; never block it
		}
	})
	result := make(chan acquireOutcome, 1)
	go func() {
		out, err := s.svc.Acquire(ctx, req)
		result <- acquireOutcome{out: out, err: err}
	}()
	return s.acquireStreamLoop(stream, req.Resource, queued, changed, result)
}

// acquireStreamLoop sends the positions and the result. After a failed
// send (the caller left) it only waits for the acquire to finish.
func (s *Service) acquireStreamLoop(stream lockstepv1.Lock_AcquireStreamServer, resource string,
	queued <-chan queuedAt, changed <-chan struct{}, result <-chan acquireOutcome) error {
	var waiting *lock.LeaseID
	last := 0
	var sendErr error
	report := func(position int) {
		if position <= 0 || position == last || sendErr != nil {
			return
		}
		last = position
		ev := &lockstepv1.AcquireEvent{Event: &lockstepv1.AcquireEvent_Queued{Queued: &lockstepv1.Queued{Position: int32(position)}}}
		if err := stream.Send(ev); err != nil {
			sendErr = fmt.Errorf("send queue position: %w", err)
		}
	}
	for {
		select {
		case q := <-queued:
			waiting = &q.id
			// This member may already have applied later entries (or, a
			// follower, not yet the enqueue): prefer its state when it has
			// the request.
			if p := s.svc.QueuePosition(resource, q.id); p > 0 {
				report(p)
			} else {
				report(q.position)
			}
		case <-changed:
			if waiting != nil {
				report(s.svc.QueuePosition(resource, *waiting))
			}
		case o := <-result:
			if o.err != nil {
				return toStatus(o.err)
			}
			if sendErr != nil {
				return sendErr
			}
			return stream.Send(&lockstepv1.AcquireEvent{Event: &lockstepv1.AcquireEvent_Result{Result: acquireResponse(o.out)}})
		}
	}
}

// ctxErr is the status of a stream whose caller left.
func ctxErr(ctx context.Context) error { return toStatus(ctx.Err()) }
