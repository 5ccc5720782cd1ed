package tracing

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc/metadata"
)

// mdCarrier reads and writes a traceparent in gRPC metadata (lower-case
// keys, as gRPC requires).
type mdCarrier metadata.MD

var _ propagation.TextMapCarrier = mdCarrier(nil)

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// ExtractIncoming returns ctx with the remote span context of the
// traceparent in the incoming call's metadata, if any.
func (t *Tracer) ExtractIncoming(ctx context.Context) context.Context {
	if t == nil {
		return ctx
	}
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ctx
	}
	return t.prop.Extract(ctx, mdCarrier(md))
}

// InjectOutgoing returns ctx whose outgoing gRPC calls carry ctx's span
// context as a traceparent.
func (t *Tracer) InjectOutgoing(ctx context.Context) context.Context {
	if t == nil {
		return ctx
	}
	md := metadata.MD{}
	t.prop.Inject(ctx, mdCarrier(md))
	if len(md) == 0 {
		return ctx
	}
	return metadata.NewOutgoingContext(ctx, metadata.Join(outgoing(ctx), md))
}

func outgoing(ctx context.Context) metadata.MD {
	md, _ := metadata.FromOutgoingContext(ctx)
	return md
}
