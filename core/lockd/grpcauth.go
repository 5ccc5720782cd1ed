package lockd

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/grpcapi"
	"github.com/lockstep/lockstep/core/server"
)

// grpcAuth puts the "authorization: Bearer <token>" metadata of every call
// into its context, where the shared operations (core/server) check it as
// they do for HTTP. A watch names no operation of its own there, so its
// first request is checked here for the read right.
func grpcAuth(srv *server.Server) []grpc.ServerOption {
	unary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		return next(withGRPCToken(ctx), req)
	}
	stream := func(s any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
		w := &authStream{ServerStream: ss, ctx: withGRPCToken(ss.Context())}
		if strings.HasSuffix(info.FullMethod, "/Watch") {
			w.srv = srv
		}
		return next(s, w)
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
}

func withGRPCToken(ctx context.Context) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		return server.WithToken(ctx, server.BearerToken(v))
	}
	return ctx
}

// authStream is a stream whose context carries the token; with srv set it
// checks each received request that names a resource or prefix.
type authStream struct {
	grpc.ServerStream
	ctx context.Context
	srv *server.Server
}

func (s *authStream) Context() context.Context { return s.ctx }

func (s *authStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil || s.srv == nil {
		return err
	}
	var names []string
	if r, ok := m.(interface{ GetResource() string }); ok {
		names = append(names, r.GetResource())
	}
	if p, ok := m.(interface{ GetPrefix() string }); ok {
		names = append(names, p.GetPrefix())
	}
	if err := s.srv.Authorize(s.ctx, acl.RightRead, names...); err != nil {
		return grpcError(err)
	}
	return nil
}

// grpcError is the status a refused watch ends with.
func grpcError(err error) error {
	ae := server.Classify(err)
	return status.Error(grpcapi.Code(ae.Code), ae.Error)
}
