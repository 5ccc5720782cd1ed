package lockd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Limits of the health listener: probes are tiny GETs.
const (
	healthReadTimeout = 5 * time.Second
	healthIdleTimeout = time.Minute
	healthHeaderBytes = 8 << 10
)

// healthFront is a member's probe listener (Options.HealthAddr): plaintext
// HTTP serving /livez, /readyz and /healthz only. A kubelet's httpGet probe
// presents no client certificate, so it cannot reach them on an API that
// requires one; this port gives it the probes and nothing else (no API, no
// /metrics), so serving it in the clear exposes only what a probe learns.
type healthFront struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// listenHealth binds addr; no address, no listener (nil).
func listenHealth(addr string) (*healthFront, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health listen on %s: %w", addr, err)
	}
	return &healthFront{ln: ln, done: make(chan struct{})}, nil
}

// serve answers the probes with api, the member's API handler, which
// runs them as on the API port.
func (f *healthFront) serve(api http.Handler, logger *slog.Logger, id string) {
	if f == nil {
		return
	}
	f.srv = &http.Server{
		Handler:           probesOnly(api),
		ReadHeaderTimeout: healthReadTimeout,
		ReadTimeout:       healthReadTimeout,
		IdleTimeout:       healthIdleTimeout,
		MaxHeaderBytes:    healthHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	go func() {
		defer close(f.done)
		if err := f.srv.Serve(f.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("health server stopped", "node", id, "err", err)
		}
	}()
}

// probesOnly passes the probe paths to next and answers anything else 404.
func probesOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case api.PathLive, api.PathReady, api.PathHealth:
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(api.Error{
			Error: "the health listener serves only " + api.PathLive + ", " + api.PathReady + " and " + api.PathHealth + ", not " + r.URL.Path,
			Code:  api.CodeNotFound,
		})
	})
}

// stop shuts the listener down (closing it if it never served).
func (f *healthFront) stop(ctx context.Context) error {
	if f == nil {
		return nil
	}
	if f.srv == nil {
		return f.ln.Close()
	}
	err := f.srv.Shutdown(ctx)
	if err != nil {
		_ = f.srv.Close()
	}
	<-f.done
	return ignoreCanceled(err)
}

// addr is the bound address, "" without a listener.
func (f *healthFront) addr() string {
	if f == nil {
		return ""
	}
	return f.ln.Addr().String()
}
