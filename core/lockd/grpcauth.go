package lockd

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/lockstep/lockstep/core/service"
)

// grpcAuth puts the "authorization: Bearer <token>" metadata of every call
// into its context, where the service's operations check it as they do
// for HTTP; streams (AcquireStream, KeepAlive, Watch) run those operations
// too.
func grpcAuth() []grpc.ServerOption {
	unary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		return next(withGRPCToken(ctx), req)
	}
	stream := func(s any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, next grpc.StreamHandler) error {
		return next(s, &authStream{ServerStream: ss, ctx: withGRPCToken(ss.Context())})
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
}

func withGRPCToken(ctx context.Context) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		return service.WithToken(ctx, service.BearerToken(v))
	}
	return ctx
}

// authStream is a stream whose context carries the token.
type authStream struct {
	grpc.ServerStream
	ctx context.Context
}

var _ grpc.ServerStream = (*authStream)(nil)

func (s *authStream) Context() context.Context { return s.ctx }
