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
