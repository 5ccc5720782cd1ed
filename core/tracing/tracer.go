// Package tracing follows one request across lockstep's hops with
// OpenTelemetry spans: gateway -> member -> forward -> Raft apply -> reply.
// Span context crosses HTTP (forwarding, the gateway) as a W3C traceparent
// header and gRPC as the same key in the call's metadata.
//
// A nil *Tracer is tracing off: every method returns at once without
// allocating, so the request path pays nothing when no exporter is set.
package tracing

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// scope names lockstep's instrumentation in the spans it exports.
const scope = "github.com/lockstep/lockstep"

// Tracer starts lockstep's spans from one TracerProvider.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TraceContext
}

// New returns a Tracer on tp; a nil tp gives nil (off).
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		return nil
	}
	return &Tracer{tracer: tp.Tracer(scope)}
}

// off is the span of a nil Tracer: a value of an empty struct, so handing
// it out as a trace.Span allocates nothing.
var off trace.Span = noop.Span{}

// Start starts a span named name under ctx's span (or the remote parent
// Extract put there).
func (t *Tracer) Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if t == nil {
		return ctx, off
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(kind))
}

// Record adds a finished span from start to end under ctx's span, for a
// step timed elsewhere (the Raft commit and apply, seen by the FSM).
func (t *Tracer) Record(ctx context.Context, name string, start, end time.Time) {
	if t == nil || start.IsZero() || end.Before(start) {
		return
	}
	_, span := t.tracer.Start(ctx, name, trace.WithTimestamp(start))
	span.End(trace.WithTimestamp(end))
}

// Inject writes ctx's span context into h as a traceparent header.
func (t *Tracer) Inject(ctx context.Context, h http.Header) {
	if t == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	t.prop.Inject(ctx, propagation.HeaderCarrier(h))
}

// Extract returns ctx with the remote span context of h's traceparent, if
// any, as the parent of the spans started under it.
func (t *Tracer) Extract(ctx context.Context, h http.Header) context.Context {
	if t == nil {
		return ctx
	}
	return t.prop.Extract(ctx, propagation.HeaderCarrier(h))
}

// Traceparent is ctx's span context as a W3C traceparent value, "" when
// there is none or tracing is off: what a binary hop (core/forward)
// carries in place of the header.
func (t *Tracer) Traceparent(ctx context.Context) string {
	if t == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	t.prop.Inject(ctx, c)
	return c["traceparent"]
}

// WithTraceparent returns ctx with the remote span context of a
// traceparent value, as Extract does for a header.
func (t *Tracer) WithTraceparent(ctx context.Context, traceparent string) context.Context {
	if t == nil || traceparent == "" {
		return ctx
	}
	return t.prop.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}
