package lockd

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/lockstep/lockstep/core/grpcapi"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/service"
)

// grpcFront is a member's gRPC API (Options.GRPCAddr). It listens before
// the groups start, like HTTP, so a taken port fails Start at once.
type grpcFront struct {
	ln      net.Listener
	changes *grpcapi.Changes
	ops     *service.Service // the member's, shared with HTTP
	svc     *grpcapi.Service
	srv     *grpc.Server
	done    chan struct{}
}

// listenGRPC binds addr; no address, no front (nil).
func listenGRPC(addr string) (*grpcFront, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("grpc listen on %s: %w", addr, err)
	}
	return &grpcFront{ln: ln, changes: grpcapi.NewChanges(), done: make(chan struct{})}, nil
}

// tune feeds every shard's applied events to the front's change feed.
func (f *grpcFront) tune(cfg *node.Config) {
	if f == nil {
		return
	}
	cfg.Events = f.changes.Publish
}

// serve starts serving svc's operations over gRPC, over TLS when cfg is
// set.
func (f *grpcFront) serve(svc *service.Service, logger *slog.Logger, cfg *tls.Config) {
	if f == nil {
		return
	}
	f.ops = svc
	opts := append(grpcAuth(), grpcapi.Observed(svc)...)
	if cfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	}
	f.svc = grpcapi.New(svc, f.changes)
	f.srv = grpcapi.NewServer(f.svc, opts...)
	go func() {
		defer close(f.done)
		if err := f.srv.Serve(f.ln); err != nil {
			logger.Error("grpc server stopped", "node", svc.NodeID(), "err", err)
		}
	}()
}

// stop ends the gRPC server (closing the listener if it never served).
func (f *grpcFront) stop(ctx context.Context) error {
	if f == nil {
		return nil
	}
	if f.srv == nil {
		return f.ln.Close()
	}
	// Graceful stop waits for every stream; watches would never end.
	f.ops.EndWatches()
	f.svc.EndHealth()
	err := grpcapi.Stop(ctx, f.srv)
	<-f.done
	return ignoreCanceled(err)
}

// addr is the bound address, "" without a front.
func (f *grpcFront) addr() string {
	if f == nil {
		return ""
	}
	return f.ln.Addr().String()
}
