// Package server is lockstep's HTTP/JSON front end: it validates requests,
// hands them to the local node (which forwards to the leader), and maps
// results and errors onto the contract in core/api.
package server

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/node"
)

// Config tunes the HTTP front end.
type Config struct {
	// RequestTimeout bounds the time to reach a leader and commit; a
	// blocking acquire gets its wait on top.
	RequestTimeout time.Duration
	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes int64
	Logger       *slog.Logger
}

// DefaultConfig returns the front-end defaults.
func DefaultConfig() Config {
	return Config{RequestTimeout: 5 * time.Second, MaxBodyBytes: 64 << 10}
}

// Server serves the public API of one node.
type Server struct {
	node    *node.Node
	cfg     Config
	metrics *metrics
	mux     *http.ServeMux
}

// New builds the HTTP API for n. Each server has its own metrics registry
// so several nodes can share one process (lockd dev).
func New(n *node.Node, cfg Config) *Server {
	def := DefaultConfig()
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = def.RequestTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = def.MaxBodyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewRegistry()
	s := &Server{node: n, cfg: cfg, metrics: newMetrics(reg, n), mux: http.NewServeMux()}
	s.route(api.PathAcquire, http.MethodPost, "acquire", s.acquire)
	s.route(api.PathRelease, http.MethodPost, "release", s.release)
	s.route(api.PathRenew, http.MethodPost, "renew", s.renew)
	s.route(api.PathStatus, http.MethodGet, "status", s.status)
	s.route(api.PathCluster, http.MethodGet, "cluster", s.cluster)
	s.route(api.PathHealth, http.MethodGet, "healthz", s.health)
	s.mux.Handle(api.PathMetrics, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, api.CodeNotFound, "no such endpoint: "+r.URL.Path)
	})
	return s
}

// Handler returns the http.Handler serving every endpoint.
func (s *Server) Handler() http.Handler { return s.mux }

// handlerFunc answers with a status/body or an error; route does the rest.
type handlerFunc func(r *http.Request) (any, error)

func (s *Server) route(path, method, op string, h handlerFunc) {
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeError(w, api.CodeMethodNotAllowed, r.Method+" not allowed on "+path+", use "+method)
			return
		}
		start := time.Now()
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		body, err := h(r)
		result := "ok"
		if err != nil {
			e := classify(err)
			result = string(e.Code)
			writeAPIError(w, e)
		} else {
			writeJSON(w, http.StatusOK, body)
		}
		s.metrics.observe(op, result, time.Since(start))
	})
}
