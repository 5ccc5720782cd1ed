package main

import (
	"crypto/tls"
	"errors"
	"flag"

	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/tlsconf"
)

// tlsArgs are the certificate flags of a member or a gateway. One
// certificate serves every port of a process: a member's node
// certificate is good for serving and for dialing its peers. A separate
// --tls-client-ca lets API clients come from another CA than the members,
// so no client certificate can ever be a member's.
type tlsArgs struct {
	cert, key, ca, clientCA string
	// upstreamCert and upstreamKey are the client certificate a gateway
	// presents to the members.
	upstreamCert, upstreamKey string
	insecure                  bool
}

func (a *tlsArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&a.cert, "tls-cert", "", "PEM certificate served on every port (make one with: lockd certs)")
	fs.StringVar(&a.key, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&a.ca, "tls-ca", "", "PEM CA of the members' certificates (mutual TLS between members; the default --tls-client-ca)")
	fs.StringVar(&a.clientCA, "tls-client-ca", "", "PEM CA whose client certificates the API ports require (default: --tls-ca)")
	fs.BoolVar(&a.insecure, "insecure", false, "serve plaintext instead of TLS (no --tls-* flags; trusted networks and tests only)")
}

func (a *tlsArgs) registerGateway(fs *flag.FlagSet) {
	a.register(fs)
	fs.StringVar(&a.upstreamCert, "upstream-cert", "", "PEM client certificate the gateway presents to the members")
	fs.StringVar(&a.upstreamKey, "upstream-key", "", "PEM private key of --upstream-cert")
}

// errNoTLS is why a process started with production flags refuses to run
// without certificates.
var errNoTLS = errors.New("no TLS certificates: give --tls-cert, --tls-key and --tls-ca (lockd certs makes them), " +
	"or --insecure to serve plaintext")

// check refuses a half-given or contradictory set of flags.
func (a *tlsArgs) check() error {
	given := a.cert != "" || a.key != "" || a.ca != "" || a.clientCA != "" || a.upstreamCert != "" || a.upstreamKey != ""
	switch {
	case a.insecure && given:
		return errors.New("--insecure serves plaintext: drop it or the --tls-* flags")
	case a.insecure:
		return nil
	case !given:
		return errNoTLS
	case a.cert == "" || a.key == "" || a.ca == "":
		return errors.New("--tls-cert, --tls-key and --tls-ca go together")
	case (a.upstreamCert == "") != (a.upstreamKey == ""):
		return errors.New("--upstream-cert and --upstream-key go together")
	}
	return nil
}

// member loads a member's certificates: nil with --insecure.
func (a *tlsArgs) member() (*lockd.TLS, error) {
	if err := a.check(); err != nil || a.insecure {
		return nil, err
	}
	cert, err := tlsconf.LoadCert(a.cert, a.key)
	if err != nil {
		return nil, err
	}
	ca, err := tlsconf.LoadPool(a.ca)
	if err != nil {
		return nil, err
	}
	// The members' CA is always among the API's client CAs: a follower
	// asks its leader's API for GET /cluster with its node certificate.
	clientCAs := []string{a.ca}
	if a.clientCA != "" {
		clientCAs = append(clientCAs, a.clientCA)
	}
	clients, err := tlsconf.LoadPool(clientCAs...)
	if err != nil {
		return nil, err
	}
	return &lockd.TLS{Cert: cert, CA: ca, APIClients: clients}, nil
}

// gateway loads a gateway's listener and upstream configs: nils with
// --insecure.
func (a *tlsArgs) gateway() (serve, upstream *tls.Config, err error) {
	if err := a.check(); err != nil || a.insecure {
		return nil, nil, err
	}
	cert, err := tlsconf.LoadCert(a.cert, a.key)
	if err != nil {
		return nil, nil, err
	}
	ca, err := tlsconf.LoadPool(a.ca)
	if err != nil {
		return nil, nil, err
	}
	clients := ca
	if a.clientCA != "" {
		if clients, err = tlsconf.LoadPool(a.clientCA); err != nil {
			return nil, nil, err
		}
	}
	var up *tls.Certificate
	if a.upstreamCert != "" {
		c, err := tlsconf.LoadCert(a.upstreamCert, a.upstreamKey)
		if err != nil {
			return nil, nil, err
		}
		up = &c
	}
	return tlsconf.Server(cert, clients), tlsconf.Client(ca, up), nil
}
