package lockd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/lockstep/lockstep/core/forward"
	"github.com/lockstep/lockstep/core/link"
	"github.com/lockstep/lockstep/core/mux"
	"github.com/lockstep/lockstep/core/raftlink"
	"github.com/lockstep/lockstep/core/tracing"
)

// memberPort is a member's one listener for its peers (the Raft address).
// Everything one member sends another (every group's Raft RPCs, forwarded
// commands and read-index queries) travels on one link connection
// (core/link), and a Raft snapshot on a connection of its own; core/mux
// tells the two apart by their first bytes. The public HTTP port serves no
// internal endpoint.
type memberPort struct {
	mux     *mux.Listener
	link    *link.TCP
	raft    *raftlink.Net
	forward *forward.Forwarder
}

func listenMembers(bind string, logger *slog.Logger, t *TLS, tracer *tracing.Tracer) (*memberPort, error) {
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
	m := mux.New(t.peerListener(ln), logger)
	conns, err := m.Route(mux.Link, 0)
	if err != nil {
		return nil, errors.Join(err, m.Close())
	}
	streams, err := m.Route(mux.Stream, 0)
	if err != nil {
		return nil, errors.Join(err, m.Close())
	}
	cfg := link.DefaultTCPConfig()
	cfg.Local, cfg.Conns, cfg.Streams, cfg.Logger = bind, conns, streams, logger
	cfg.Dial = peerDialer(t.peerDial())
	l, err := link.NewTCP(cfg)
	if err != nil {
		return nil, errors.Join(err, m.Close())
	}
	rn, err := raftlink.New(l, raftlink.DefaultConfig(bind))
	if err != nil {
		return nil, errors.Join(err, l.Close(), m.Close())
	}
	return &memberPort{mux: m, link: l, raft: rn, forward: forward.New(l, tracer)}, nil
}

// peerDialer dials a peer's member port and names the connection's use:
// over mutual TLS when dialTLS is set.
func peerDialer(dialTLS *tls.Config) func(ctx context.Context, addr string, stream bool) (net.Conn, error) {
	return func(ctx context.Context, addr string, stream bool) (net.Conn, error) {
		kind := mux.Link
		if stream {
			kind = mux.Stream
		}
		if dialTLS != nil {
			return mux.DialTLS(ctx, addr, kind, 0, dialTLS)
		}
		return mux.Dial(ctx, addr, kind, 0)
	}
}

// Close stops the link and the shared listener; each group's Raft
// transport is closed by its group's shutdown.
func (p *memberPort) Close() error {
	return errors.Join(p.link.Close(), p.mux.Close())
}
