package lockd

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Profiles is the profiling listener (Options.PprofAddr, lockd
// --pprof-addr): net/http/pprof on its own mux, so the API's handlers never
// serve a profile.
type Profiles struct {
	ln  net.Listener
	srv *http.Server
}

// CheckProfileAddr refuses anything but a loopback host:port: a profile
// shows request contents and a CPU profile costs the member, so the
// listener is never exposed beyond the machine.
func CheckProfileAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("profiling address: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("profiling address %q is not loopback (127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}

// ServeProfiles listens on addr (loopback only) and serves /debug/pprof/.
func ServeProfiles(addr string, logger *slog.Logger) (*Profiles, error) {
	if err := CheckProfileAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("profiling listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	p := &Profiles{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() {
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("profiling listener stopped", "err", err)
		}
	}()
	return p, nil
}

// Addr is the bound address.
func (p *Profiles) Addr() string { return p.ln.Addr().String() }

// Close stops the listener; nil-safe.
func (p *Profiles) Close() error {
	if p == nil {
		return nil
	}
	return p.srv.Close()
}
