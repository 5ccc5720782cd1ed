package mux

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
)

// DialTLS is Dial over TLS, for a member port whose listener New was
// given wrapped in tls.NewListener: the handshake comes first, so the
// header and everything after it are encrypted. cfg's ServerName, when
// empty, is the host of addr.
func DialTLS(ctx context.Context, addr string, kind Kind, group uint64, cfg *tls.Config) (net.Conn, error) {
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("mux: %w", err)
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mux: tls dial %s: %w", addr, err)
	}
	return sendHeader(ctx, conn, addr, kind, group)
}

// handshake completes the TLS handshake of a connection accepted through
// a tls.NewListener (within the header deadline), so that a refused
// certificate is logged as such: it is what an operator needs to see
// when a member cannot join. Plain connections pass.
func (l *Listener) handshake(conn net.Conn) error {
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return nil
	}
	if err := tc.Handshake(); err != nil {
		l.logger.Warn("mux: TLS handshake refused", "remote", conn.RemoteAddr(), "err", err)
		return err
	}
	return nil
}
