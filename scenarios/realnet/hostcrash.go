package realnet

import (
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/lockstep/lockstep/scenarios"
)

// Host crashes. kill -9 of a process leaves its host up: the kernel
// refuses new connections and resets open ones at once, so a client's
// attempts fail in microseconds and the client library retries elsewhere
// at once. The simulator's crash is a host that vanishes from the network:
// a call in flight to it, or sent to it while it is down, is never
// answered, even once the node is back, and its caller learns nothing
// until its own timeout. With ClusterOptions.HostCrash the clients, the
// gateway and the members' API calls reach each member through an HTTP
// front of ours (the member publishes that address, lockd
// --advertise-http) that does the same per request: a request that was at
// the member when it died, or arrived while it was down, is held without
// an answer until its caller gives up; requests sent after the restart
// reach the new process. The caller's connection to the front is never
// reset by a crash.

// NeedsHostCrash reports whether scenario s does what it says only with
// host crashes: a workload whose acquires get one attempt (acquire_once)
// is about callers left waiting on a member that died, and kill -9 on a
// live host leaves none (the reset sends the client library to another
// member at once, with its request id, to take its grant there).
func NeedsHostCrash(s scenarios.Scenario) bool { return s.Workload.AcquireOnce }

// front is a member's API front: an HTTP reverse proxy to the member.
type front struct {
	addr  string
	srv   *http.Server
	ln    net.Listener
	up    *http.Transport
	delay time.Duration

	mu sync.Mutex
	// down is whether the member's host is gone; epoch counts its
	// crashes, so a request can tell that the process it reached died.
	down  bool
	epoch int
	// held counts requests left unanswered by a crash (for the report).
	held int64
}

// openFront starts m's front.
func (c *Cluster) openFront(m *member) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	f := &front{addr: ln.Addr().String(), ln: ln, delay: c.opts.Delay,
		up: &http.Transport{DialContext: (&net.Dialer{Timeout: time.Second}).DialContext, MaxIdleConnsPerHost: 64}}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: m.httpAddr})
	rp.Transport = f
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if r.Context().Err() == nil {
			w.WriteHeader(http.StatusBadGateway)
		}
	}
	f.srv = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := f.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Warn("realnet: front stopped", "node", m.id, "err", err)
		}
	}()
	m.front = f
	return nil
}

// RoundTrip forwards one request to the member, or holds it unanswered
// when the member's host is down or dies while the request is there.
func (f *front) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	down, epoch := f.down, f.epoch
	f.mu.Unlock()
	if down {
		return nil, f.hold(r.Context())
	}
	sleep(r.Context(), f.delay)
	resp, err := f.up.RoundTrip(r)
	f.mu.Lock()
	died := f.epoch != epoch
	f.mu.Unlock()
	if died {
		if resp != nil {
			_ = resp.Body.Close()
		}
		return nil, f.hold(r.Context())
	}
	if err == nil {
		sleep(r.Context(), f.delay)
	}
	return resp, err
}

// hold waits until the caller gives up: the answer is lost with the host.
func (f *front) hold(ctx context.Context) error {
	f.mu.Lock()
	f.held++
	f.mu.Unlock()
	<-ctx.Done()
	return ctx.Err()
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// apiAddr is where everyone but the harness reaches m's API.
func (m *member) apiAddr() string {
	if m.front != nil {
		return m.front.addr
	}
	return m.httpAddr
}

// hostDown takes m's host off the network (before the kill) or brings it
// back (after the start). Connections to the dead process are dropped, so
// no request after the restart goes down one of them.
func (m *member) hostDown(down bool) {
	f := m.front
	if f == nil {
		return
	}
	f.mu.Lock()
	if down && !f.down {
		f.epoch++
	}
	f.down = down
	f.mu.Unlock()
	f.up.CloseIdleConnections()
}

// heldRequests is how many requests m's front left unanswered.
func (m *member) heldRequests() int64 {
	if m.front == nil {
		return 0
	}
	m.front.mu.Lock()
	defer m.front.mu.Unlock()
	return m.front.held
}

// closeFront stops m's front, ending the requests it holds.
func (m *member) closeFront() {
	if m.front != nil {
		_ = m.front.srv.Close()
		m.front.up.CloseIdleConnections()
	}
}
