package lockd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/mux"
	"github.com/lockstep/lockstep/core/node"
)

// memberPort is a member's one listener for its peers (the Raft address):
// the Raft RPCs and forwarded commands of every group share it through
// core/mux, and the public HTTP port serves no internal endpoint.
type memberPort struct {
	mux  *mux.Listener
	addr *net.TCPAddr
	// dialTLS dials peers over mutual TLS; nil: plaintext.
	dialTLS *tls.Config
	logs    io.Writer
	logger  *slog.Logger

	mu       sync.Mutex
	forwards []*http.Server
	wg       sync.WaitGroup
	// rpcsInFlight is the transports' MaxRPCsInFlight.
	rpcsInFlight int
}

// defaultRPCsInFlight turns hashicorp/raft's pipeline replication off. With
// its default of 2 in flight, v1.7.2 can wedge a follower's pipeline after a
// refused AppendEntries: the leader keeps heartbeating it but never sends it
// another entry, and Shutdown hangs (seen in our tests under load; the same
// deadlock made grafana/pyroscope#5518 turn pipelining off). Without it
// throughput was within noise (EXPERIMENTS §11: 0.87-0.92 of pipelined,
// median, on a loaded box).
const defaultRPCsInFlight = 1

// raftPoolSize is how many pooled connections a Raft transport keeps per
// peer; raftTimeout bounds an RPC's I/O.
const (
	raftPoolSize = 4
	raftTimeout  = 5 * time.Second
)

func listenMembers(bind string, logger *slog.Logger, raftLogs io.Writer, t *TLS) (*memberPort, error) {
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
	if raftLogs == nil {
		raftLogs = io.Discard
	}
	return &memberPort{mux: mux.New(t.peerListener(ln), logger), addr: addr, dialTLS: t.peerDial(), logs: raftLogs, logger: logger}, nil
}

// transport is group g's Raft transport over the shared port.
func (p *memberPort) transport(g uint64) (*raft.NetworkTransport, error) {
	route, err := p.mux.Route(mux.Raft, g)
	if err != nil {
		return nil, err
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:          &mux.StreamLayer{Route: route, Advertise: p.addr, TLS: p.dialTLS},
		MaxPool:         raftPoolSize,
		Timeout:         raftTimeout,
		MaxRPCsInFlight: p.rpcsInFlight,
		Logger:          hclog.New(&hclog.LoggerOptions{Name: "raft-net", Output: p.logs, Level: hclog.DefaultLevel}),
	}), nil
}

// forwarder sends group g's commands to its leader's member port.
func (p *memberPort) forwarder(g uint64) *node.HTTPForwarder {
	tr := &http.Transport{
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if p.dialTLS != nil {
				return mux.DialTLS(ctx, addr, mux.Forward, g, p.dialTLS)
			}
			return mux.Dial(ctx, addr, mux.Forward, g)
		},
	}
	return node.NewHTTPForwarder(tr)
}

// serveForwards answers group g's forwarded commands with h until Close.
func (p *memberPort) serveForwards(g uint64, h http.Handler) error {
	route, err := p.mux.Route(mux.Forward, g)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	p.mu.Lock()
	p.forwards = append(p.forwards, srv)
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := srv.Serve(route); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, mux.ErrClosed) {
			p.logger.Error("forward server stopped", "group", g, "err", err)
		}
	}()
	return nil
}

// Close stops the forward servers and the shared listener; each Raft
// transport is closed by its group's shutdown.
func (p *memberPort) Close() error {
	var err error
	p.mu.Lock()
	for _, srv := range p.forwards {
		err = errors.Join(err, srv.Close())
	}
	p.mu.Unlock()
	p.wg.Wait()
	return errors.Join(err, p.mux.Close())
}
