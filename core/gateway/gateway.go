// Package gateway is lockstep's stateless router: it serves the same HTTP
// API as a member, learns the shard map and the shard leaders from the
// members' GET /cluster, and sends each request straight to the leader of
// its resource's shard, so a request costs no forwarding hop between
// members. Its only state is that cache, so any number of gateways may run
// side by side.
package gateway

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/shardmap"
	"github.com/lockstep/lockstep/core/tracing"
)

// Config configures a Gateway.
type Config struct {
	// Join lists members' HTTP API addresses (host:port) to learn the
	// cluster from; at least one.
	Join []string
	// HTTPAddr is the address Start listens on.
	HTTPAddr string
	// RequestTimeout bounds a request, retries included; a blocking
	// acquire gets its wait on top (as on a member).
	RequestTimeout time.Duration
	// RefreshInterval is how often the shard map is fetched again.
	RefreshInterval time.Duration
	// BackoffBase and BackoffMax shape the pause before a retry: full
	// jitter in [0, min(BackoffMax, BackoffBase*2^retry)].
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// MaxBodyBytes bounds a request body; keep it at or above the members'
	// bound so that they, not the gateway, judge the size.
	MaxBodyBytes int64
	Logger       *slog.Logger
	// Transport carries the gateway's requests to members; nil dials TCP.
	// The simulator sets one over its network, so the real gateway runs
	// under the same faults as the members.
	Transport http.RoundTripper
	// TLS, when set, serves HTTPS; its ClientAuth and ClientCAs decide
	// which client certificates are required.
	TLS *tls.Config
	// UpstreamTLS, when set, reaches the members over HTTPS with it (the
	// default transport only).
	UpstreamTLS *tls.Config
	// Tracer records a span per relayed request and per attempt, and
	// carries them to the members; nil is off.
	Tracer *tracing.Tracer
	// NewTracer, when set and Tracer is nil, makes Start build the Tracer
	// (lockd's OTLP exporter, reporting its errors to the logger given);
	// Stop calls the flush it returns. A hook, so the gateway (which the
	// simulator runs) never links an exporter.
	NewTracer func(context.Context, *slog.Logger) (*tracing.Tracer, func(context.Context) error, error)
}

// DefaultConfig returns the gateway defaults.
func DefaultConfig() Config {
	return Config{
		HTTPAddr:        "127.0.0.1:7000",
		RequestTimeout:  5 * time.Second,
		RefreshInterval: 2 * time.Second,
		BackoffBase:     20 * time.Millisecond,
		BackoffMax:      500 * time.Millisecond,
		MaxBodyBytes:    1 << 20,
	}
}

// Validate returns one error per broken rule.
func (c Config) Validate() error {
	var errs []error
	if len(c.Join) == 0 {
		errs = append(errs, errors.New("gateway: no --join address"))
	}
	for _, a := range c.Join {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("gateway: join address %q: %w", a, err))
		}
	}
	if c.RequestTimeout <= 0 || c.RefreshInterval <= 0 || c.BackoffBase <= 0 || c.MaxBodyBytes <= 0 {
		errs = append(errs, errors.New("gateway: timeouts, backoff and body bound must be > 0"))
	}
	if c.BackoffMax < c.BackoffBase {
		errs = append(errs, fmt.Errorf("gateway: BackoffMax %v below BackoffBase %v", c.BackoffMax, c.BackoffBase))
	}
	return errors.Join(errs...)
}

// Gateway routes API requests to shard leaders.
type Gateway struct {
	cfg  Config
	http *http.Client
	// scheme is the members' ("http" or "https").
	scheme  string
	metrics *metrics
	mux     *http.ServeMux
	// routes caches the shard map, learnt from the joined members and
	// every member a map lists.
	routes *shardmap.Cache
	// spread rotates the member a leaderless request goes to.
	spread atomic.Uint32

	ln     net.Listener
	srv    *http.Server
	stop   context.CancelFunc
	closed chan struct{}
	// flushTraces exports the spans still buffered (Config.Trace).
	flushTraces func(context.Context) error
}

// New checks cfg and builds a gateway that has not fetched a map yet.
func New(cfg Config) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewRegistry()
	tr := cfg.Transport
	if tr == nil {
		tr = &http.Transport{
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
			DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
			TLSClientConfig:     cfg.UpstreamTLS,
		}
	}
	scheme := "http"
	if cfg.UpstreamTLS != nil {
		scheme = "https"
	}
	g := &Gateway{
		cfg: cfg,
		// No client timeout: a blocking acquire may wait long; each
		// request carries its own deadline.
		http:    &http.Client{Transport: cfg.Tracer.Transport(tr)},
		scheme:  scheme,
		metrics: newMetrics(reg),
		mux:     http.NewServeMux(),
		closed:  make(chan struct{}),
	}
	rc := shardmap.DefaultConfig()
	rc.Seeds, rc.LearnMembers, rc.Fetch, rc.Observe, rc.Logger = cfg.Join, true, g.fetchView, g.metrics.observeRefresh, cfg.Logger
	routes, err := shardmap.New(rc)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.routes = routes
	g.mux.HandleFunc(api.PathLive, g.live)
	g.mux.HandleFunc(api.PathReady, g.ready)
	g.mux.HandleFunc(api.PathHealth, g.ready)
	g.mux.Handle(api.PathMetrics, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	g.mux.HandleFunc(api.PathWatch, g.watch)
	g.mux.HandleFunc("/", g.relay)
	return g, nil
}

// Handler serves the API. A path not spelled canonically is 404 before
// the mux, which would redirect it, as a member answers it.
func (g *Gateway) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !api.CanonicalPath(r.URL) {
			writeError(w, api.CodeNotFound, api.NonCanonicalPathError(r.URL))
			return
		}
		g.mux.ServeHTTP(w, r)
	})
}

// Run refreshes the shard map now and every RefreshInterval until ctx
// ends. Start runs it; a caller serving Handler itself (no listener, as
// the simulator does) runs it instead.
func (g *Gateway) Run(ctx context.Context) { g.routes.Run(ctx, g.cfg.RefreshInterval) }

// Start listens on HTTPAddr, fetches the map once (a failure is only
// logged: requests then go to the joined members, which forward) and
// serves until Stop.
func Start(ctx context.Context, cfg Config) (*Gateway, error) {
	flush := func(context.Context) error { return nil }
	if cfg.Tracer == nil && cfg.NewTracer != nil {
		var err error
		if cfg.Tracer, flush, err = cfg.NewTracer(ctx, cfg.Logger); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
	}
	g, err := New(cfg)
	if err != nil {
		_ = flush(ctx)
		return nil, err
	}
	g.flushTraces = flush
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		_ = flush(ctx)
		return nil, fmt.Errorf("gateway: listen on %s: %w", cfg.HTTPAddr, err)
	}
	g.ln = ln
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g.stop = cancel
	g.srv = &http.Server{
		Handler:           g.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(g.cfg.Logger.Handler(), slog.LevelWarn),
		// A copy: net/http adds its protocols to the config it serves.
		TLSConfig: cfg.TLS.Clone(),
	}
	go g.Run(runCtx)
	go func() {
		defer close(g.closed)
		var err error
		if cfg.TLS != nil {
			err = g.srv.ServeTLS(ln, "", "")
		} else {
			err = g.srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.cfg.Logger.Error("gateway: http server stopped", "err", err)
		}
	}()
	return g, nil
}

// Addr is the bound HTTP address.
func (g *Gateway) Addr() string { return g.ln.Addr().String() }

// URL is the gateway's base URL: https when it serves TLS.
func (g *Gateway) URL() string {
	if g.cfg.TLS != nil {
		return "https://" + g.Addr()
	}
	return "http://" + g.Addr()
}

// Stop ends the refreshes and shuts the HTTP server down.
func (g *Gateway) Stop(ctx context.Context) error {
	g.stop()
	err := g.srv.Shutdown(ctx)
	if err != nil {
		_ = g.srv.Close()
	}
	<-g.closed
	g.routes.Close()
	g.http.CloseIdleConnections()
	if ferr := g.flushTraces(ctx); ferr != nil {
		g.cfg.Logger.Warn("gateway: flush traces", "err", ferr)
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("gateway: shutdown: %w", err)
	}
	return nil
}

// fetchView asks the member at addr for its own view of the shard map
// (local=true: it then never asks its leader).
func (g *Gateway) fetchView(ctx context.Context, addr string) (api.ClusterResponse, error) {
	var v api.ClusterResponse
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.scheme+"://"+addr+api.PathCluster+"?local=true", nil)
	if err != nil {
		return v, fmt.Errorf("build request: %w", err)
	}
	resp, err := g.http.Do(req)
	if err != nil {
		return v, fmt.Errorf("ask %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return v, fmt.Errorf("ask %s: HTTP %d", addr, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxReplyBytes)).Decode(&v); err != nil {
		return v, fmt.Errorf("decode %s's view: %w", addr, err)
	}
	return v, nil
}

// live answers 200 while the gateway serves.
func (g *Gateway) live(w http.ResponseWriter, r *http.Request) {
	if !getOnly(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, api.Health{Status: "ok", Node: "gateway", RaftState: "gateway"})
}

// ready answers 200 while the gateway holds a map fetched within three
// refresh intervals: an older one means no member answers it.
func (g *Gateway) ready(w http.ResponseWriter, r *http.Request) {
	if !getOnly(w, r) {
		return
	}
	m := g.routes.Map()
	if m == nil || time.Since(m.Fetched) > 3*g.cfg.RefreshInterval {
		writeJSON(w, http.StatusServiceUnavailable, api.Health{Status: "unavailable", Node: "gateway",
			RaftState: "gateway", Code: api.CodeUnavailable, Error: "not ready: no recent shard map from any member"})
		return
	}
	writeJSON(w, http.StatusOK, api.Health{Status: "ok", Node: "gateway", RaftState: "gateway"})
}

// getOnly answers 405 like a member to anything but GET or HEAD.
func getOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeError(w, api.CodeMethodNotAllowed, fmt.Sprintf("method not allowed: %s on %s, use GET, HEAD", r.Method, r.URL.Path))
	return false
}
