package grpcapi

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/service"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// keepAliveParallel bounds the renews one KeepAlive stream runs at once;
// a client sending faster is held back by flow control.
const keepAliveParallel = 32

// KeepAlive implements lockstepv1.LockServer: each request renews one
// lease (through the same operation as Renew) and is answered by one
// response naming it, in completion order. A failed renew is answered
// with its API error and the stream goes on; the stream ends when the
// client closes its side or leaves.
func (s *Service) KeepAlive(stream lockstepv1.Lock_KeepAliveServer) error {
	ctx := stream.Context()
	var sendMu sync.Mutex
	slots := make(chan struct{}, keepAliveParallel)
	var wg sync.WaitGroup
	// No Send may run after the handler returns.
	defer wg.Wait()
	for {
		in, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctxErr(ctx)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			resp := s.keepAliveOne(ctx, in)
			sendMu.Lock()
			defer sendMu.Unlock()
			// A failed send means the stream is gone: Recv fails next.
			_ = stream.Send(resp)
		}()
	}
}

// keepAliveOne renews one lease, holding an in-flight token like any
// request.
func (s *Service) keepAliveOne(ctx context.Context, in *lockstepv1.KeepAliveRequest) *lockstepv1.KeepAliveResponse {
	resp := &lockstepv1.KeepAliveResponse{Resource: in.GetResource(), LeaseId: in.GetLeaseId()}
	done, err := s.svc.Admit()
	if err == nil {
		defer done()
		var out api.RenewResponse
		out, err = s.svc.Renew(ctx, api.RenewRequest{Resource: in.GetResource(), LeaseID: in.GetLeaseId(), TTLMs: in.GetTtlMs()})
		if err == nil {
			resp.ExpiresInMs, resp.FencingToken, resp.LogTimeMs = out.ExpiresInMs, out.FencingToken, out.LogTimeMs
			return resp
		}
	}
	ae := service.Classify(err)
	resp.Error = &lockstepv1.Error{Code: string(ae.Code), Message: ae.Error}
	return resp
}
