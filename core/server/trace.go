package server

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/lockstep/lockstep/core/api"
)

// serveObserved serves one HTTP request through the mux. An API request
// (not a probe or /metrics) is also observed by the service
// (service.Observe: a server span, child of the caller's traceparent, and
// after its reply a log line and a namespace count).
func (s *Server) serveObserved(w http.ResponseWriter, r *http.Request) {
	op, ok := apiOps[r.URL.Path]
	if !ok {
		s.mux.ServeHTTP(w, r)
		return
	}
	ctx := s.svc.Tracer().Extract(r.Context(), r.Header)
	ctx, call := s.svc.Observe(ctx, op)
	if call.Span.IsRecording() {
		call.Span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path),
			attribute.String("lockstep.node", s.svc.NodeID()))
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.mux.ServeHTTP(sw, r.WithContext(ctx))
	if call.Span.IsRecording() {
		call.Span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			call.Span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	}
	call.End(strconv.Itoa(sw.status), sw.status >= 500 && sw.status != http.StatusServiceUnavailable)
}

// apiOps are the observed API operations by path.
var apiOps = map[string]string{
	api.PathAcquire: "acquire", api.PathAcquireMany: "acquire_many", api.PathRelease: "release",
	api.PathRenew: "renew", api.PathStatus: "status", api.PathFence: "fence", api.PathValidate: "validate",
	api.PathCluster: "cluster",
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

var _ http.ResponseWriter = (*statusWriter)(nil)

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
