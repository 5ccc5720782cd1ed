package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestIssueMakesP256CertificatesWithTheirUsages: goal — lockd certs'
// certificates are ECDSA P-256, chain to the CA, carry the usage of
// their kind (node: serve and dial; gateway: serve; client: dial) and
// the loopback and --hosts SANs. Method: issue one of each and verify
// them with crypto/x509 for each usage.
func TestIssueMakesP256CertificatesWithTheirUsages(t *testing.T) {
	out, err := Issue(Plan{Dir: t.TempDir(), Nodes: []string{"n1"}, Gateways: []string{"gw"}, Clients: []string{"app"},
		Hosts: []string{"db1.internal", "10.0.0.5"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := LoadPool(out.CA)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pair           Pair
		serves, dials  bool
		host, notHost  string
		serverHostname bool
	}{
		{out.Nodes["n1"], true, true, "10.0.0.5", "10.0.0.6", true},
		{out.Gateways["gw"], true, false, "db1.internal", "db2.internal", true},
		{out.Clients["app"], false, true, "", "", false},
	} {
		c, err := LoadCert(tc.pair.Cert, tc.pair.Key)
		if err != nil {
			t.Fatal(err)
		}
		leaf := c.Leaf
		if k, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
			t.Errorf("%s: key %T, want ECDSA P-256", leaf.Subject.CommonName, leaf.PublicKey)
		}
		for usage, want := range map[x509.ExtKeyUsage]bool{x509.ExtKeyUsageServerAuth: tc.serves, x509.ExtKeyUsageClientAuth: tc.dials} {
			_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}})
			if (err == nil) != want {
				t.Errorf("%s: verify for usage %v: %v, want ok=%v", leaf.Subject.CommonName, usage, err, want)
			}
		}
		if !tc.serverHostname {
			continue
		}
		for _, h := range []string{"localhost", "127.0.0.1", "::1", leaf.Subject.CommonName, tc.host} {
			if err := leaf.VerifyHostname(h); err != nil {
				t.Errorf("%s: not valid for %s: %v", leaf.Subject.CommonName, h, err)
			}
		}
		if leaf.VerifyHostname(tc.notHost) == nil {
			t.Errorf("%s: valid for %s, which was never given", leaf.Subject.CommonName, tc.notHost)
		}
	}
}

// TestIssueRefusesBadNames: goal — names that cannot be file names, or
// that repeat, are refused before anything is written. Method: Issue
// with each and read the error.
func TestIssueRefusesBadNames(t *testing.T) {
	for _, p := range []Plan{
		{Nodes: []string{"../x"}},
		{Nodes: []string{"n1"}, Clients: []string{"n1"}},
		{Clients: []string{"ca"}},
		{Nodes: []string{""}},
	} {
		p.Dir, p.Validity = t.TempDir(), time.Hour
		if _, err := Issue(p); err == nil || !strings.Contains(err.Error(), "name") {
			t.Errorf("Issue(%v): %v, want a name error", slices.Concat(p.Nodes, p.Clients), err)
		}
	}
}

// TestPeerServerTakesOnlyNodeCertificates: goal — the member port's
// check accepts a node certificate and refuses a client one. Method:
// call its VerifyConnection with each leaf.
func TestPeerServerTakesOnlyNodeCertificates(t *testing.T) {
	out, err := Issue(Plan{Dir: t.TempDir(), Nodes: []string{"n1"}, Clients: []string{"app"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	node, _ := LoadCert(out.Nodes["n1"].Cert, out.Nodes["n1"].Key)
	app, _ := LoadCert(out.Clients["app"].Cert, out.Clients["app"].Key)
	cfg := PeerServer(node, x509.NewCertPool())
	if err := cfg.VerifyConnection(connState(node.Leaf)); err != nil {
		t.Errorf("node certificate refused: %v", err)
	}
	if err := cfg.VerifyConnection(connState(app.Leaf)); err == nil {
		t.Error("client certificate accepted on the member port")
	}
}

func connState(leaf *x509.Certificate) tls.ConnectionState {
	return tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
}
