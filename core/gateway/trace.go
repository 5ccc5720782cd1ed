package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// startRelay starts the server span of one relayed request, child of the
// client's traceparent if it sent one.
func (g *Gateway) startRelay(r *http.Request, c call) (context.Context, trace.Span) {
	ctx := g.cfg.Tracer.Extract(r.Context(), r.Header)
	name := "gateway"
	if g.cfg.Tracer != nil { // the name costs an allocation: only when tracing
		name += " " + c.op
	}
	ctx, span := g.cfg.Tracer.Start(ctx, name, trace.SpanKindServer)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path),
			attribute.String("lockstep.resource", c.resource))
	}
	return ctx, span
}

// endRelay ends the relay's span and logs the request at debug.
func (g *Gateway) endRelay(ctx context.Context, span trace.Span, c call, status int, start time.Time) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	}
	span.End()
	if !g.cfg.Logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{slog.String("op", c.op), slog.Int("status", status), slog.Duration("duration", time.Since(start))}
	if c.resource != "" {
		attrs = append(attrs, slog.String("resource", c.resource))
	}
	if sc := span.SpanContext(); sc.IsSampled() {
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "gateway: request", attrs...)
}

// startAttempt starts the client span of one attempt at member addr; the
// gateway's transport carries it to the member as a traceparent.
func (g *Gateway) startAttempt(ctx context.Context, addr string) (context.Context, trace.Span) {
	ctx, span := g.cfg.Tracer.Start(ctx, "gateway.attempt", trace.SpanKindClient)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("server.address", addr))
	}
	return ctx, span
}

// endAttempt ends an attempt's span with the member's status or the
// reason it is retried.
func endAttempt(span trace.Span, o outcome) {
	if span.IsRecording() {
		if o.answer.status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", o.answer.status))
		}
		if o.retry != "" {
			span.SetAttributes(attribute.String("lockstep.retry", o.retry))
			span.SetStatus(codes.Error, o.retry)
		}
	}
	span.End()
}
