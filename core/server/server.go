// Package server is lockstep's HTTP/JSON front end over core/service: it
// routes requests, checks their method, path and query, decodes their
// bodies strictly, and writes the answers and errors as JSON with the HTTP
// status of their API code. The operations themselves, their
// authorisation, admission and error classes are the service's.
package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/service"
)

// Config tunes the HTTP front end. A zero field takes DefaultConfig's
// value. The request deadline is the service's (service.Config).
type Config struct {
	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes int64
	// ReadTimeout bounds receiving a request's headers and, separately,
	// its body: a client that stalls mid-request is answered 400 and cut
	// off instead of holding a connection open.
	ReadTimeout time.Duration
	// WriteTimeout is the time allowed to write a reply after the request's
	// own deadline (the service's RequestTimeout, plus the wait of a
	// blocking acquire).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle for this long.
	IdleTimeout time.Duration
	// Logger gets net/http's own errors (at warn); nil takes the
	// service's.
	Logger *slog.Logger
}

// DefaultConfig returns the front-end defaults.
func DefaultConfig() Config {
	return Config{
		MaxBodyBytes: 64 << 10,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 5 * time.Second,
		IdleTimeout:  2 * time.Minute,
	}
}

// Validate refuses a negative size or timeout; zero takes the default.
func (c Config) Validate() error {
	if c.MaxBodyBytes < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0 {
		return fmt.Errorf("%w: MaxBodyBytes, ReadTimeout, WriteTimeout and IdleTimeout must not be negative", ErrConfig)
	}
	return nil
}

// ErrConfig marks an unusable Config.
var ErrConfig = errors.New("server: invalid config")

// Connection limits of HTTPServer.
const (
	// maxHeaderBytes bounds a request's header block.
	maxHeaderBytes = 64 << 10
	// maxStreamsPerConn bounds concurrent requests on one HTTP/2
	// connection (h2 is offered over TLS only). An HTTP/1.1 connection
	// runs one request at a time.
	maxStreamsPerConn = 100
)

// Server serves the public API of one member over HTTP.
type Server struct {
	svc     *service.Service
	cfg     Config
	metrics *metrics
	mux     *http.ServeMux
}

// New builds the HTTP API over svc; zero fields of cfg take
// DefaultConfig's. Its series go into svc's registry, which GET /metrics
// serves.
func New(svc *service.Service, cfg Config) (*Server, error) {
	if svc == nil {
		return nil, fmt.Errorf("%w: nil service", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	def := DefaultConfig()
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
	if cfg.Logger == nil {
		cfg.Logger = svc.Config().Logger
	}
	s := &Server{svc: svc, cfg: cfg, metrics: newMetrics(svc.Registry()), mux: http.NewServeMux()}
	s.route(api.PathAcquire, endpoint{method: http.MethodPost, op: "acquire", limited: true, h: s.acquire})
	s.route(api.PathAcquireMany, endpoint{method: http.MethodPost, op: "acquire_many", limited: true, h: s.acquireMany})
	s.route(api.PathRelease, endpoint{method: http.MethodPost, op: "release", limited: true, h: s.release})
	s.route(api.PathRenew, endpoint{method: http.MethodPost, op: "renew", limited: true, h: s.renew})
	s.route(api.PathStatus, endpoint{method: http.MethodGet, op: "status", limited: true, params: []string{"resource", "stale"}, h: s.status})
	s.route(api.PathFence, endpoint{method: http.MethodGet, op: "fence", limited: true, params: []string{"resource"}, h: s.fence})
	s.route(api.PathValidate, endpoint{method: http.MethodGet, op: "validate", limited: true, params: []string{"resource", "token", "stale"}, h: s.validate})
	s.route(api.PathCluster, endpoint{method: http.MethodGet, op: "cluster", limited: true, params: []string{"local"}, h: s.cluster})
	s.routeACL()
	s.route(api.PathLive, endpoint{method: http.MethodGet, op: "livez", h: s.live})
	s.route(api.PathReady, endpoint{method: http.MethodGet, op: "readyz", h: s.ready})
	s.route(api.PathHealth, endpoint{method: http.MethodGet, op: "healthz", h: s.ready})
	s.mux.HandleFunc(api.PathWatch, s.watch)
	s.mux.Handle(api.PathMetrics, guard(api.PathMetrics, http.MethodGet, promhttp.HandlerFor(svc.Registry(), promhttp.HandlerOpts{})))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, api.CodeNotFound, "no such endpoint: "+r.URL.Path)
	})
	return s, nil
}

// HTTPServer returns an http.Server for Handler with the connection limits
// of the config. It sets no ReadTimeout or WriteTimeout: one deadline for
// every request would cut blocking acquires short (a wait may last the
// state machine's MaxWait), so Handler sets deadlines per request instead.
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
	hs.RegisterOnShutdown(s.svc.EndWatches)
	return hs
}

// Handler returns the http.Handler serving every endpoint.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// net/http keeps a connection's write deadline from one request to
		// the next, so every request sets its own; an acquire extends it by
		// its wait once the body is read.
		budget := s.svc.Config().RequestTimeout + s.cfg.WriteTimeout
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
	// limited routes are admitted by the service (service.Admit).
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
	timeout := req.s.svc.Config().RequestTimeout
	_ = req.rc.SetWriteDeadline(time.Now().Add(timeout + wait + req.s.cfg.WriteTimeout))
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
				w.Header().Set("Retry-After", service.RetryAfter(err))
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
		done, err := s.svc.Admit()
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
			return nil, fmt.Errorf("%w: request body not received within the %s read timeout", service.ErrInvalid, s.cfg.ReadTimeout)
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
		return fmt.Errorf("%w: body larger than %d bytes", service.ErrInvalid, tooBig.Limit)
	}
	return fmt.Errorf("%w: reading the body: %w", service.ErrInvalid, err)
}
