package server

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/tracing"
)

// serveObserved serves one HTTP request through the mux. An API request
// (not a probe or /metrics) also gets a server span, child of the caller's
// traceparent, and, after its reply, a log line and a namespace count.
func (s *Server) serveObserved(w http.ResponseWriter, r *http.Request) {
	op, name, ok := apiOp(r.URL.Path)
	if !ok {
		s.mux.ServeHTTP(w, r)
		return
	}
	ctx := s.cfg.Tracer.Extract(r.Context(), r.Header)
	ctx, span := s.cfg.Tracer.Start(ctx, name, trace.SpanKindServer)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path),
			attribute.String("lockstep.node", s.host.ID()))
	}
	ctx, end := s.Observe(ctx, op)
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.mux.ServeHTTP(sw, r.WithContext(ctx))
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	}
	span.End()
	end(strconv.Itoa(sw.status), sw.status >= 500 && sw.status != http.StatusServiceUnavailable)
}

// apiOps are the API operations by path, with their span names built once.
var apiOps = func() map[string][2]string {
	ops := map[string][2]string{}
	for path, op := range map[string]string{
		api.PathAcquire: "acquire", api.PathAcquireMany: "acquire_many", api.PathRelease: "release",
		api.PathRenew: "renew", api.PathStatus: "status", api.PathCluster: "cluster",
	} {
		ops[path] = [2]string{op, "lockstep " + op}
	}
	return ops
}()

// apiOp names the API operation at path and its span; probes, /metrics
// and unknown paths are not one.
func apiOp(path string) (op, span string, ok bool) {
	o, ok := apiOps[path]
	return o[0], o[1], ok
}

// Observe starts the bookkeeping of one API request of any front end: the
// returned ctx carries a tracing.Info the node fills in. end logs the
// request with result (debug, or warn when failed says the server or the
// outcome failed) and counts it under its resource's namespace.
func (s *Server) Observe(ctx context.Context, op string) (context.Context, func(result string, failed bool)) {
	start := time.Now()
	ctx, info := tracing.WithInfo(ctx)
	return ctx, func(result string, failed bool) {
		if res := info.Resource(); res != "" {
			s.namespaces.count(res, op)
		}
		level := slog.LevelDebug
		if failed {
			level = slog.LevelWarn
		}
		if !s.cfg.Logger.Enabled(ctx, level) {
			return
		}
		attrs := append([]slog.Attr{slog.String("op", op), slog.String("result", result),
			slog.Duration("duration", time.Since(start))}, info.LogAttrs(ctx)...)
		s.cfg.Logger.LogAttrs(ctx, level, "request", attrs...)
	}
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
