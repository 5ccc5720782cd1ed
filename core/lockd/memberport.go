package lockd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/mux"
	"github.com/lockstep/lockstep/core/node"
)

// memberPort is a member's one listener for its peers (the Raft address):
// Raft RPCs and forwarded commands share it through core/mux, and the
// public HTTP port serves no internal endpoint.
type memberPort struct {
	mux      *mux.Listener
	raft     *raft.NetworkTransport
	forwards *http.Server
	done     chan struct{}
	logger   *slog.Logger
}

// raftPoolSize is how many pooled connections a Raft transport keeps per
// peer; raftTimeout bounds an RPC's I/O.
const (
	raftPoolSize = 4
	raftTimeout  = 5 * time.Second
)

func listenMembers(bind string, logger *slog.Logger, raftLogs io.Writer) (*memberPort, error) {
	addr, err := net.ResolveTCPAddr("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raft address %q: %w", bind, err)
	}
	if addr.IP == nil || addr.IP.IsUnspecified() {
		return nil, fmt.Errorf("raft address %q: give an address peers can reach, not a wildcard", bind)
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("member port on %s: %w", bind, err)
	}
	m := mux.New(ln, logger)
	route, err := m.Route(mux.Raft, 0)
	if err != nil {
		_ = m.Close()
		return nil, err
	}
	trans := raft.NewNetworkTransport(&mux.StreamLayer{Route: route, Advertise: addr}, raftPoolSize, raftTimeout, raftLogs)
	return &memberPort{mux: m, raft: trans, done: make(chan struct{}), logger: logger}, nil
}

// forwarder sends commands to a leader's member port.
func (p *memberPort) forwarder() *node.HTTPForwarder {
	tr := &http.Transport{
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return mux.Dial(ctx, addr, mux.Forward, 0)
		},
	}
	return node.NewHTTPForwarder(tr)
}

// serveForwards answers forwarded commands with h until Close.
func (p *memberPort) serveForwards(h http.Handler) {
	route, err := p.mux.Route(mux.Forward, 0)
	if err != nil {
		p.logger.Error("forward route", "err", err)
		return
	}
	p.forwards = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		defer close(p.done)
		if err := p.forwards.Serve(route); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, mux.ErrClosed) {
			p.logger.Error("forward server stopped", "err", err)
		}
	}()
}

// Close stops the forward server and the shared listener; the Raft
// transport is closed by the node's shutdown.
func (p *memberPort) Close() error {
	var err error
	if p.forwards != nil {
		err = p.forwards.Close()
		<-p.done
	}
	return errors.Join(err, p.mux.Close())
}
