package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"time"

	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/tlsconf"
)

// devPKI is lockd dev --tls's throwaway CA and certificates, in a temp
// dir removed on exit.
type devPKI struct {
	dir     string
	issued  tlsconf.Issued
	members map[string]*lockd.TLS
	// gateway serves the dev gateway; upstream is its client side.
	gateway, upstream *tls.Config
}

// devClient names the client certificate printed for curl and lockctl.
const devClient = "client"

func makeDevPKI(ids []string) (*devPKI, error) {
	dir, err := os.MkdirTemp("", "lockstep-dev-tls-")
	if err != nil {
		return nil, fmt.Errorf("dev tls: %w", err)
	}
	p := &devPKI{dir: dir, members: map[string]*lockd.TLS{}}
	if err := p.issue(ids); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

func (p *devPKI) issue(ids []string) error {
	var err error
	p.issued, err = tlsconf.Issue(tlsconf.Plan{Dir: p.dir, Nodes: ids, Gateways: []string{"gateway"},
		Clients: []string{devClient}, Validity: 7 * 24 * time.Hour})
	if err != nil {
		return err
	}
	ca, err := tlsconf.LoadPool(p.issued.CA)
	if err != nil {
		return err
	}
	for _, id := range ids {
		f := p.issued.Nodes[id]
		cert, err := tlsconf.LoadCert(f.Cert, f.Key)
		if err != nil {
			return err
		}
		p.members[id] = &lockd.TLS{Cert: cert, CA: ca, APIClients: ca}
	}
	gw, err := tlsconf.LoadCert(p.issued.Gateways["gateway"].Cert, p.issued.Gateways["gateway"].Key)
	if err != nil {
		return err
	}
	client := p.issued.Clients[devClient]
	up, err := tlsconf.LoadCert(client.Cert, client.Key)
	if err != nil {
		return err
	}
	p.gateway, p.upstream = tlsconf.Server(gw, ca), tlsconf.Client(ca, &up)
	return nil
}

// member is id's certificates, nil without --tls.
func (p *devPKI) member(id string) *lockd.TLS {
	if p == nil {
		return nil
	}
	return p.members[id]
}

// curlFlags are the curl options that reach the dev cluster.
func (p *devPKI) curlFlags() string {
	if p == nil {
		return ""
	}
	c := p.issued.Clients[devClient]
	return fmt.Sprintf("--cacert %s --cert %s --key %s ", p.issued.CA, c.Cert, c.Key)
}
