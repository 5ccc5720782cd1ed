package service

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep/lockstep/core/tracing"
)

// Call is the bookkeeping of one observed API request (Observe).
type Call struct {
	// Span is the request's server span, "lockstep <op>": the front end
	// adds its protocol's attributes and status before End.
	Span  trace.Span
	s     *Service
	op    string
	start time.Time
	info  *tracing.Info
	ctx   context.Context
}

// Observe starts the bookkeeping of one API request of any front end:
// a server span under ctx (the front end has put the caller's trace
// context there with Tracer), and a tracing.Info in the returned ctx that
// the node fills in (resource, client, lease, shard). The front end calls
// End once the request is answered. Probes and /metrics are not observed.
func (s *Service) Observe(ctx context.Context, op string) (context.Context, *Call) {
	ctx, span := s.cfg.Tracer.Start(ctx, s.spanName(op), trace.SpanKindServer)
	ctx, info := tracing.WithInfo(ctx)
	return ctx, &Call{Span: span, s: s, op: op, start: time.Now(), info: info, ctx: ctx}
}

// spanName is "lockstep <op>", built once per op.
func (s *Service) spanName(op string) string {
	if v, ok := s.spanNames.Load(op); ok {
		return v.(string)
	}
	v, _ := s.spanNames.LoadOrStore(op, "lockstep "+op)
	return v.(string)
}

// End ends the request's span, counts the request under its resource's
// namespace and logs it with result (the front end's: an HTTP status, a
// gRPC code) at debug, or at warn when failed says the server or the
// outcome failed.
func (c *Call) End(result string, failed bool) {
	c.Span.End()
	if res := c.info.Resource(); res != "" {
		c.s.namespaces.count(res, c.op)
	}
	level := slog.LevelDebug
	if failed {
		level = slog.LevelWarn
	}
	logger := c.s.cfg.Logger
	if !logger.Enabled(c.ctx, level) {
		return
	}
	attrs := append([]slog.Attr{slog.String("op", c.op), slog.String("result", result),
		slog.Duration("duration", time.Since(c.start))}, c.info.LogAttrs(c.ctx)...)
	logger.LogAttrs(c.ctx, level, "request", attrs...)
}
