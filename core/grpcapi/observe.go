package grpcapi

import (
	"context"
	"path"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockstep/lockstep/core/service"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// Observed are the server options that give every lock API call what an
// HTTP request gets: the service's observation (service.Observe: a server
// span, child of the caller's traceparent in the metadata, and after the
// call a log line and a namespace count).
func Observed(svc *service.Service) []grpc.ServerOption {
	o := observer{svc: svc, ops: new(sync.Map)}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(o.unary), grpc.ChainStreamInterceptor(o.stream)}
}

type observer struct {
	svc *service.Service
	// ops caches each method's op name (a few methods, built once each
	// instead of per call).
	ops *sync.Map
}

// begin starts a call's observation; end finishes it with the call's
// error.
func (o observer) begin(ctx context.Context, method string) (context.Context, func(error)) {
	v, ok := o.ops.Load(method)
	if !ok {
		v, _ = o.ops.LoadOrStore(method, opName(method))
	}
	ctx = o.svc.Tracer().ExtractIncoming(ctx)
	ctx, call := o.svc.Observe(ctx, v.(string))
	if call.Span.IsRecording() {
		call.Span.SetAttributes(attribute.String("rpc.system", "grpc"), attribute.String("rpc.method", method))
	}
	return ctx, func(err error) {
		code := status.Code(err)
		if call.Span.IsRecording() {
			call.Span.SetAttributes(attribute.String("rpc.grpc.status_code", code.String()))
			if err != nil {
				call.Span.SetStatus(codes.Error, err.Error())
			}
		}
		call.End(code.String(), code == grpccodes.Internal || code == grpccodes.DeadlineExceeded)
	}
}

func (o observer) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if !observed(info.FullMethod) {
		return h(ctx, req)
	}
	ctx, end := o.begin(ctx, info.FullMethod)
	out, err := h(ctx, req)
	end(err)
	return out, err
}

func (o observer) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if !observed(info.FullMethod) {
		return h(srv, ss)
	}
	ctx, end := o.begin(ss.Context(), info.FullMethod)
	err := h(srv, &contextStream{ServerStream: ss, ctx: ctx})
	end(err)
	return err
}

// contextStream is ss with the call's observed context.
type contextStream struct {
	grpc.ServerStream
	ctx context.Context
}

var _ grpc.ServerStream = (*contextStream)(nil)

func (s *contextStream) Context() context.Context { return s.ctx }

// lockMethods prefixes the methods of the lock API.
var lockMethods = "/" + lockstepv1.Lock_ServiceDesc.ServiceName + "/"

// observed tells whether method is one of the lock API's. Health checks
// and reflection get no span or log line, as the HTTP probes get none.
func observed(method string) bool { return strings.HasPrefix(method, lockMethods) }

// opName turns /lockstep.v1.Lock/AcquireStream into acquire_stream, the
// style of the HTTP operation names.
func opName(method string) string {
	name := path.Base(method)
	var b strings.Builder
	for i, r := range name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
