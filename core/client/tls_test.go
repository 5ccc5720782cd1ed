package client

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/tlsconf"
)

// TestTLSConfigReachesAnHTTPSCluster: goal — Config.TLS lets the client
// call an https endpoint that requires client certificates, and without
// the client certificate the call fails; TLS with an HTTPClient is
// refused. Method: the fake server behind httptest's TLS listener
// configured as a member's API (tlsconf.Server with the CA as client CA).
func TestTLSConfigReachesAnHTTPSCluster(t *testing.T) {
	out, err := tlsconf.Issue(tlsconf.Plan{Dir: t.TempDir(), Nodes: []string{"n1"}, Clients: []string{"app"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := tlsconf.LoadPool(out.CA)
	if err != nil {
		t.Fatal(err)
	}
	node, err := tlsconf.LoadCert(out.Nodes["n1"].Cert, out.Nodes["n1"].Key)
	if err != nil {
		t.Fatal(err)
	}
	app, err := tlsconf.LoadCert(out.Clients["app"].Cert, out.Clients["app"].Key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(newFakeServer())
	srv.TLS = tlsconf.Server(node, ca)
	srv.StartTLS()
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		ok   bool
	}{
		{"client certificate", tlsconf.Client(ca, &app), true},
		{"no client certificate", tlsconf.Client(ca, nil), false},
	} {
		c := newTestClient(t, fastRetries(Config{Endpoints: []string{srv.URL}, TLS: tc.cfg, MaxAttempts: 2}))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Status(ctx, "r1")
		cancel()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Status err %v, want success %v", tc.name, err, tc.ok)
		}
	}
	if _, err := New(Config{Endpoints: []string{srv.URL}, TLS: tlsconf.Client(ca, &app), HTTPClient: &http.Client{}}); err == nil {
		t.Error("New took both TLS and HTTPClient")
	}
}
