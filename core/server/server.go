// Package server is lockstep's HTTP/JSON front end: it validates requests,
// hands them to the local node (which forwards to the leader), and maps
// results and errors onto the contract in core/api.
package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/shard"
	"github.com/lockstep/lockstep/core/tracing"
)

// Config tunes the HTTP front end.
type Config struct {
	// RequestTimeout bounds the time to reach a leader and commit; a
	// blocking acquire gets its wait on top.
	RequestTimeout time.Duration
	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes int64
	// ReadTimeout bounds receiving a request's headers and, separately,
	// its body: a client that stalls mid-request is answered 400 and cut
	// off instead of holding a connection open.
	ReadTimeout time.Duration
	// WriteTimeout is the time allowed to write a reply after the request's
	// own deadline (RequestTimeout, plus the wait of a blocking acquire).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle for this long.
	IdleTimeout time.Duration
	// MaxInFlight bounds the API requests (acquire, release, renew, status,
	// cluster) served at once, blocked acquires included; one more is
	// answered 503 unavailable at once. Probes and /metrics are not counted.
	MaxInFlight int
	// MaxWait is the longest acquire wait the state machine accepts
	// (lock.Config.MaxWait); it sizes the write deadline of requests
	// forwarded from other members.
	MaxWait time.Duration
	// ReadyLeaderContact is how recently a node must have heard from its
	// leader to be ready (/readyz).
	ReadyLeaderContact time.Duration
	// ReadyApplyLag is how many entries the applied index may trail the
	// leader's commit index while a node is ready (once it caught up).
	ReadyApplyLag uint64
	// ReadyTimeout bounds a readiness check's read-index round (asking each
	// shard's leader how far the log goes, and waiting to apply that far),
	// and the one a stale status read makes while this member has not
	// caught up yet.
	ReadyTimeout time.Duration
	Logger       *slog.Logger
	// Collectors are extra series for /metrics (the member's stage timings).
	Collectors []prometheus.Collector
	// PeerTLS, when set, is the client side of a follower asking its
	// leader's API (GET /cluster) over HTTPS; nil: plain HTTP.
	PeerTLS *tls.Config
	// Tracer records a server span per API request; nil is off.
	Tracer *tracing.Tracer
	// Namespaces are the resource namespaces counted under their own label
	// in lockstep_namespace_requests_total; empty counts the first
	// NamespaceLimit (default 20) seen. Any other namespace counts as "other".
	Namespaces     []string
	NamespaceLimit int
}

// DefaultConfig returns the front-end defaults.
func DefaultConfig() Config {
	return Config{
		RequestTimeout: 5 * time.Second,
		MaxBodyBytes:   64 << 10,
		ReadTimeout:    10 * time.Second,
		WriteTimeout:   5 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxInFlight:    10_000,
		MaxWait:        lock.DefaultConfig().MaxWait,
		// A follower hears from its leader every heartbeat (a tenth of the
		// heartbeat timeout); two seconds of silence means it is cut off.
		ReadyLeaderContact: 2 * time.Second,
		// A few Raft batches (up to 512 entries each) may sit between
		// commit and apply on a healthy, busy node.
		ReadyApplyLag: 4096,
		// Under a probe's usual 1 s timeout, with room for the reply.
		ReadyTimeout: 500 * time.Millisecond,
	}
}

// Connection limits of HTTPServer.
const (
	// maxHeaderBytes bounds a request's header block.
	maxHeaderBytes = 64 << 10
	// maxStreamsPerConn bounds concurrent requests on one HTTP/2
	// connection (h2 is offered over TLS only). An HTTP/1.1 connection
	// runs one request at a time.
	maxStreamsPerConn = 100
)

// leaderViewTimeout bounds a follower's fetch of the leader's /cluster.
const leaderViewTimeout = time.Second

// Server serves the public API of one member: every request goes to the
// lock shard of its resource, on this member (which forwards it to that
// shard's leader).
type Server struct {
	host    *shard.Host
	cfg     Config
	metrics *metrics
	mux     *http.ServeMux
	// peers fetches the leader's view for GET /cluster on a follower, at
	// peerScheme ("http" or "https").
	peers      *http.Client
	peerScheme string
	// inFlight holds one token per API request being served.
	inFlight chan struct{}
	// rates are the namespaces' acquire buckets (quota.go).
	rates rates
	// watchesEnd is closed by EndWatches (watch.go).
	watchesEnd chan struct{}
	endOnce    sync.Once
	// namespaces counts requests per resource namespace (trace.go).
	namespaces *namespaceCounter
}

// New builds the HTTP API for the member h. Each server has its own metrics
// registry so several members can share one process (lockd dev).
func New(h *shard.Host, cfg Config) *Server {
	def := DefaultConfig()
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = def.RequestTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = def.MaxBodyBytes
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = def.ReadTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = def.WriteTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = def.IdleTimeout
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = def.MaxInFlight
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = def.MaxWait
	}
	if cfg.ReadyLeaderContact <= 0 {
		cfg.ReadyLeaderContact = def.ReadyLeaderContact
	}
	if cfg.ReadyApplyLag == 0 {
		cfg.ReadyApplyLag = def.ReadyApplyLag
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = def.ReadyTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NamespaceLimit <= 0 {
		cfg.NamespaceLimit = defaultNamespaceLimit
	}
	reg := prometheus.NewRegistry()
	s := &Server{
		host: h, cfg: cfg, metrics: newMetrics(reg, h), mux: http.NewServeMux(),
		peers:      &http.Client{Timeout: leaderViewTimeout},
		peerScheme: "http",
		inFlight:   make(chan struct{}, cfg.MaxInFlight), watchesEnd: make(chan struct{}),
	}
	if cfg.PeerTLS != nil {
		s.peers.Transport = &http.Transport{TLSClientConfig: cfg.PeerTLS}
		s.peerScheme = "https"
	}
	s.namespaces = newNamespaceCounter(reg, cfg.Namespaces, cfg.NamespaceLimit)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "lockstep_http_in_flight", Help: "API requests being served (bounded by MaxInFlight).",
	}, func() float64 { return float64(len(s.inFlight)) }))
	reg.MustRegister(cfg.Collectors...)
	s.route(api.PathAcquire, endpoint{method: http.MethodPost, op: "acquire", limited: true, h: s.acquire})
	s.route(api.PathAcquireMany, endpoint{method: http.MethodPost, op: "acquire_many", limited: true, h: s.acquireMany})
	s.route(api.PathRelease, endpoint{method: http.MethodPost, op: "release", limited: true, h: s.release})
	s.route(api.PathRenew, endpoint{method: http.MethodPost, op: "renew", limited: true, h: s.renew})
	s.route(api.PathStatus, endpoint{method: http.MethodGet, op: "status", limited: true, params: []string{"resource", "stale"}, h: s.status})
	s.route(api.PathCluster, endpoint{method: http.MethodGet, op: "cluster", limited: true, params: []string{"local"}, h: s.cluster})
	s.routeACL()
	s.route(api.PathLive, endpoint{method: http.MethodGet, op: "livez", h: s.live})
	s.route(api.PathReady, endpoint{method: http.MethodGet, op: "readyz", h: s.ready})
	s.route(api.PathHealth, endpoint{method: http.MethodGet, op: "healthz", h: s.ready})
	s.mux.HandleFunc(api.PathWatch, s.watchHTTP)
	s.mux.Handle(api.PathMetrics, guard(api.PathMetrics, http.MethodGet, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, api.CodeNotFound, "no such endpoint: "+r.URL.Path)
	})
	return s
}

// HTTPServer returns an http.Server for Handler with the connection limits
// of the config. It sets no ReadTimeout or WriteTimeout: one deadline for
// every request would cut blocking acquires short (a wait may last
// MaxWait), so Handler sets deadlines per request instead.
func (s *Server) HTTPServer() *http.Server {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.ReadTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: maxStreamsPerConn},
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
	}
	// Shutdown waits for idle connections, which a watch never is.
	hs.RegisterOnShutdown(s.EndWatches)
	return hs
}

// Handler returns the http.Handler serving every endpoint.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// net/http keeps a connection's write deadline from one request to
		// the next, so every request sets its own; an acquire extends it by
		// its wait once the body is read.
		budget := s.cfg.RequestTimeout + s.cfg.WriteTimeout
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(budget))
		if !api.CanonicalPath(r.URL) {
			// Before the mux, which would redirect to the cleaned path.
			writeError(w, api.CodeNotFound, api.NonCanonicalPathError(r.URL))
			return
		}
		s.serveObserved(w, withBearer(r))
	})
}

// endpoint describes one API route.
type endpoint struct {
	// method is POST or GET; a GET route also answers HEAD.
	method string
	// op labels the route's metrics.
	op string
	// params are the query parameters the route accepts; any other is 400.
	params []string
	// limited routes count against Config.MaxInFlight.
	limited bool
	h       handlerFunc
}

// request is what a handler gets: the parsed query and the whole body,
// both already checked for size and encoding.
type request struct {
	r     *http.Request
	query url.Values
	body  []byte
	rc    *http.ResponseController
	s     *Server
}

// allowWait extends the write deadline to cover a blocking acquire's wait.
func (req *request) allowWait(wait time.Duration) {
	_ = req.rc.SetWriteDeadline(time.Now().Add(req.s.cfg.RequestTimeout + wait + req.s.cfg.WriteTimeout))
}

// handlerFunc answers with a body (200, or the status of a reply) or an
// error; route does the rest.
type handlerFunc func(req *request) (any, error)

// reply is a handler answer other than 200 OK, with a body of its own.
type reply struct {
	code api.Code
	body any
}

// errMethodNotAllowed marks a method the endpoint does not take.
var errMethodNotAllowed = errors.New("method not allowed")

// precheck refuses a method other than method (HEAD is also fine on a GET
// endpoint), setting Allow, and a query string parseQuery refuses.
func precheck(w http.ResponseWriter, r *http.Request, path, method string, params []string) error {
	if r.Method != method && (method != http.MethodGet || r.Method != http.MethodHead) {
		allow := method
		if method == http.MethodGet {
			allow = "GET, HEAD"
		}
		w.Header().Set("Allow", allow)
		return fmt.Errorf("%w: %s on %s, use %s", errMethodNotAllowed, r.Method, path, allow)
	}
	_, err := parseQuery(r.URL.RawQuery, params)
	return err
}

// guard runs precheck before a handler that is not a route (/metrics).
func guard(path, method string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := precheck(w, r, path, method, nil); err != nil {
			writeAPIError(w, classify(err))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) route(path string, e endpoint) {
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var out any
		err := precheck(w, r, path, e.method, e.params)
		if err == nil {
			out, err = s.serve(w, r, e)
		}
		result := "ok"
		s.stampMapVersion(w)
		if err != nil {
			ae := classify(err)
			result = string(ae.Code)
			if ae.Code == api.CodeResourceExhausted && w.Header().Get("Retry-After") == "" {
				w.Header().Set("Retry-After", retryAfter(err))
			}
			writeAPIError(w, ae)
		} else if rep, ok := out.(reply); ok {
			result = string(rep.code)
			writeJSON(w, rep.code.HTTPStatus(), rep.body)
		} else {
			writeJSON(w, http.StatusOK, out)
		}
		s.metrics.observe(e.op, result, time.Since(start))
	})
}

// serve admits the request, reads its body within ReadTimeout and runs
// the handler.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, e endpoint) (any, error) {
	if e.limited {
		done, err := s.Admit()
		if err != nil {
			w.Header().Set("Retry-After", "1")
			return nil, err
		}
		defer done()
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		// The deadline stays: after the handler net/http reads on to
		// discard the rest of the body, and must not wait forever either.
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The rest of the body may still arrive: the connection cannot
			// carry another request.
			w.Header().Set("Connection", "close")
			return nil, fmt.Errorf("%w: request body not received within the %s read timeout", lock.ErrInvalid, s.cfg.ReadTimeout)
		}
		return nil, bodyError(err)
	}
	// Cleared at once: with the body read, net/http watches the connection
	// for the client going away, and a deadline passing during a long
	// acquire would look like that and cancel it.
	_ = rc.SetReadDeadline(time.Time{})
	// precheck has refused malformed, unknown and repeated parameters.
	return e.h(&request{r: r, query: r.URL.Query(), body: body, rc: rc, s: s})
}

// bodyError explains why the body could not be read.
func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fmt.Errorf("%w: body larger than %d bytes", lock.ErrInvalid, tooBig.Limit)
	}
	return fmt.Errorf("%w: reading the body: %w", lock.ErrInvalid, err)
}
