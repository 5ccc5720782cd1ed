// Package tlsconf builds lockstep's TLS configurations: the member port
// (mutual TLS between members of one cluster CA), the API listeners (a
// server certificate, client certificates when a client CA is set) and
// the clients' side. TLS 1.3 only: every party is lockstep's own code or
// a current client, so there is no older peer to accommodate.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
)

// LoadCert reads a PEM certificate (chain) and its key.
func LoadCert(certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, errors.New("tls: a certificate needs both its cert and key files")
	}
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: load %s and %s: %w", certFile, keyFile, err)
	}
	return c, nil
}

// LoadPool reads the PEM CA certificates of files into one pool.
func LoadPool(files ...string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("tls: read CA: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("tls: %s holds no PEM certificate", f)
		}
	}
	return pool, nil
}

// Server serves cert; with clientCAs it requires a client certificate
// they sign, without it asks for none.
func Server(cert tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}
	if clientCAs != nil {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
	}
	return c
}

// Client trusts servers that cas sign and presents cert when given.
func Client(cas *x509.CertPool, cert *tls.Certificate) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: cas}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

// PeerServer is the member port's side: only a member of the cluster CA
// may connect. A member presents its node certificate, which is good for
// serving too; a client certificate of the same CA is refused, so a
// client can never speak Raft or forward commands.
func PeerServer(cert tls.Certificate, cas *x509.CertPool) *tls.Config {
	c := Server(cert, cas)
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: member port: no peer certificate")
		}
		if !slices.Contains(cs.PeerCertificates[0].ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
			return fmt.Errorf("tls: member port: %q is not a node certificate (no serverAuth usage)",
				cs.PeerCertificates[0].Subject.CommonName)
		}
		return nil
	}
	return c
}

// PeerClient is a member dialing another's member port: it presents its
// node certificate and trusts only the cluster CA.
func PeerClient(cert tls.Certificate, cas *x509.CertPool) *tls.Config {
	return Client(cas, &cert)
}
