package lockd

import (
	"crypto/tls"
	"crypto/x509"
	"net"

	"github.com/lockstep/lockstep/core/tlsconf"
)

// TLS is a member's certificates (Options.TLS); without it every port
// is plaintext.
type TLS struct {
	// Cert is the member's node certificate, for every listener and for
	// dialing its peers.
	Cert tls.Certificate
	// CA verifies peers on the member port, both ways (mutual TLS).
	CA *x509.CertPool
	// APIClients, when set, verifies the client certificates the HTTP and
	// gRPC listeners then require. It should trust the node certificates
	// too: a follower asks its leader's API for GET /cluster.
	APIClients *x509.CertPool
}

// peerListener wraps the member port's listener; nil t leaves it plain.
func (t *TLS) peerListener(ln net.Listener) net.Listener {
	if t == nil {
		return ln
	}
	return tls.NewListener(ln, tlsconf.PeerServer(t.Cert, t.CA))
}

// peerDial is the config a member dials its peers with, nil when plain.
func (t *TLS) peerDial() *tls.Config {
	if t == nil {
		return nil
	}
	return tlsconf.PeerClient(t.Cert, t.CA)
}

// api is the HTTP and gRPC listeners' config, nil when plain.
func (t *TLS) api() *tls.Config {
	if t == nil {
		return nil
	}
	return tlsconf.Server(t.Cert, t.APIClients)
}
