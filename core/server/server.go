// Package server is lockstep's HTTP/JSON front end: it validates requests,
// hands them to the local node (which forwards to the leader), and maps
// results and errors onto the contract in core/api.
package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// Config tunes the HTTP front end.
type Config struct {
	// RequestTimeout bounds the time to reach a leader and commit; a
	// blocking acquire gets its wait on top.
	RequestTimeout time.Duration
	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes int64
	// ReadyLeaderContact is how recently a node must have heard from its
	// leader to be ready (/readyz).
	ReadyLeaderContact time.Duration
	// ReadyApplyLag is how many entries the applied index may trail the
	// commit index this node knows while it is ready.
	ReadyApplyLag uint64
	Logger        *slog.Logger
}

// DefaultConfig returns the front-end defaults.
func DefaultConfig() Config {
	return Config{
		RequestTimeout:     5 * time.Second,
		MaxBodyBytes:       64 << 10,
		ReadyLeaderContact: 2 * time.Second,
		// A few Raft batches (up to 512 entries each) may sit between
		// commit and apply on a healthy, busy node.
		ReadyApplyLag: 4096,
	}
}

// leaderViewTimeout bounds a follower's fetch of the leader's /cluster.
const leaderViewTimeout = time.Second

// Server serves the public API of one node.
type Server struct {
	node    *node.Node
	cfg     Config
	metrics *metrics
	mux     *http.ServeMux
	// peers fetches the leader's view for GET /cluster on a follower.
	peers *http.Client
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
	if cfg.ReadyLeaderContact <= 0 {
		cfg.ReadyLeaderContact = def.ReadyLeaderContact
	}
	if cfg.ReadyApplyLag == 0 {
		cfg.ReadyApplyLag = def.ReadyApplyLag
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewRegistry()
	s := &Server{
		node: n, cfg: cfg, metrics: newMetrics(reg, n), mux: http.NewServeMux(),
		peers: &http.Client{Timeout: leaderViewTimeout},
	}
	s.route(api.PathAcquire, endpoint{method: http.MethodPost, op: "acquire", h: s.acquire})
	s.route(api.PathRelease, endpoint{method: http.MethodPost, op: "release", h: s.release})
	s.route(api.PathRenew, endpoint{method: http.MethodPost, op: "renew", h: s.renew})
	s.route(api.PathStatus, endpoint{method: http.MethodGet, op: "status", params: []string{"resource", "stale"}, h: s.status})
	s.route(api.PathCluster, endpoint{method: http.MethodGet, op: "cluster", params: []string{"local"}, h: s.cluster})
	s.route(api.PathLive, endpoint{method: http.MethodGet, op: "livez", h: s.live})
	s.route(api.PathReady, endpoint{method: http.MethodGet, op: "readyz", h: s.ready})
	s.route(api.PathHealth, endpoint{method: http.MethodGet, op: "healthz", h: s.ready})
	s.mux.Handle(api.PathMetrics, s.guard(api.PathMetrics, http.MethodGet, nil,
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	s.mux.Handle(node.ForwardPath, n.ForwardHandler())
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, api.CodeNotFound, "no such endpoint: "+r.URL.Path)
	})
	return s
}

// Handler returns the http.Handler serving every endpoint.
func (s *Server) Handler() http.Handler { return s.mux }

// endpoint describes one API route.
type endpoint struct {
	// method is POST or GET; a GET route also answers HEAD.
	method string
	// op labels the route's metrics.
	op string
	// params are the query parameters the route accepts; any other is 400.
	params []string
	h      handlerFunc
}

// request is what a handler gets: the parsed query and the whole body,
// both already checked for size and encoding.
type request struct {
	r     *http.Request
	query url.Values
	body  []byte
}

// handlerFunc answers with a body (200, or the status of a reply) or an
// error; route does the rest.
type handlerFunc func(req *request) (any, error)

// reply is a handler answer with a status other than 200.
type reply struct {
	status int
	body   any
}

// guard answers 405 for a method other than method (and HEAD on a GET
// route) and 400 for a query string parseQuery refuses, then calls next.
func (s *Server) guard(path, method string, params []string, next http.Handler) http.Handler {
	allow := method
	if method == http.MethodGet {
		allow = "GET, HEAD"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && (method != http.MethodGet || r.Method != http.MethodHead) {
			w.Header().Set("Allow", allow)
			writeError(w, api.CodeMethodNotAllowed, fmt.Sprintf("%s not allowed on %s, use %s", r.Method, path, allow))
			return
		}
		if _, err := parseQuery(r.URL.RawQuery, params); err != nil {
			code, msg := classify(err)
			writeError(w, code, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) route(path string, e endpoint) {
	s.mux.Handle(path, s.guard(path, e.method, e.params, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		out, err := s.serve(w, r, e)
		result := "ok"
		if err != nil {
			code, msg := classify(err)
			result = string(code)
			writeError(w, code, msg)
		} else if rep, ok := out.(reply); ok {
			result = fmt.Sprint(rep.status)
			writeJSON(w, rep.status, rep.body)
		} else {
			writeJSON(w, http.StatusOK, out)
		}
		s.metrics.observe(e.op, result, time.Since(start))
	})))
}

// serve reads the request and runs the handler.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, e endpoint) (any, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		return nil, bodyError(err)
	}
	// guard has refused malformed, unknown and repeated parameters.
	return e.h(&request{r: r, query: r.URL.Query(), body: body})
}

// bodyError explains why the body could not be read.
func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fmt.Errorf("%w: body larger than %d bytes", lock.ErrInvalid, tooBig.Limit)
	}
	return fmt.Errorf("%w: reading the body: %w", lock.ErrInvalid, err)
}
