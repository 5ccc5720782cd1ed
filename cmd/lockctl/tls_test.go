package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/tlsconf"
)

// Goal: --cacert, --cert and --key reach a cluster serving mutual TLS,
// for the one-shot commands and for lock (the client library); an
// endpoint without a scheme is then https; without the client
// certificate the request fails. Method: a one-member TLS cluster with
// certificates as lockd certs makes them.
func TestTLSFlags(t *testing.T) {
	pki := t.TempDir()
	out, err := tlsconf.Issue(tlsconf.Plan{Dir: pki, Nodes: []string{"n1"}, Clients: []string{"app"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := tlsconf.LoadPool(out.CA)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tlsconf.LoadCert(out.Nodes["n1"].Cert, out.Nodes["n1"].Key)
	if err != nil {
		t.Fatal(err)
	}
	m := startMemberTLS(t, &lockd.TLS{Cert: cert, CA: ca, APIClients: ca}, nil)

	app := out.Clients["app"]
	flags := []string{"--endpoints", m.Addr(), "--cacert", out.CA, "--cert", app.Cert, "--key", app.Key, "--client-id", "A"}
	code, stdout, stderr := lockctl(t, append(flags, "acquire", "job", "--ttl", "30s")...)
	var got api.AcquireResponse
	if code != exitOK || json.Unmarshal([]byte(stdout), &got) != nil || !got.Granted {
		t.Fatalf("acquire over mutual TLS: exit %d, %q %q", code, stdout, stderr)
	}
	if code, _, stderr := lockctl(t, append(flags, "release", "job", got.LeaseID)...); code != exitOK {
		t.Fatalf("release over mutual TLS: exit %d %q", code, stderr)
	}
	if code, _, stderr := lockctl(t, append(flags, "lock", "job", "--", "true")...); code != exitOK {
		t.Fatalf("lock over mutual TLS: exit %d %q", code, stderr)
	}
	if code, _, _ := lockctl(t, "--endpoints", m.Addr(), "--cacert", out.CA, "--timeout", "2s", "status", "job"); code != exitFailed {
		t.Errorf("status without a client certificate: exit %d, want %d", code, exitFailed)
	}
	if code, _, _ := lockctl(t, append(flags[:len(flags)-2:len(flags)-2], "--key", "", "status", "job")...); code != exitUsage {
		t.Errorf("--cert without --key: exit %d, want %d", code, exitUsage)
	}
}

// Goal: lockctl without the TLS flags against a cluster serving TLS says
// that the server speaks TLS and names the flags, instead of relaying
// net/http's "HTTP 400 internal: Client sent an HTTP request to an HTTPS
// server", for the one-shot commands, watch and lock (the client library),
// and exits 2 (the command line lacks them). Method: a one-member TLS
// cluster; each command with only --endpoints.
func TestTLSClusterWithoutTLSFlags(t *testing.T) {
	out, err := tlsconf.Issue(tlsconf.Plan{Dir: t.TempDir(), Nodes: []string{"n1"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := tlsconf.LoadPool(out.CA)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tlsconf.LoadCert(out.Nodes["n1"].Cert, out.Nodes["n1"].Key)
	if err != nil {
		t.Fatal(err)
	}
	m := startMemberTLS(t, &lockd.TLS{Cert: cert, CA: ca, APIClients: ca}, nil)
	for _, args := range [][]string{
		{"status", "job"}, {"acquire", "job", "--ttl", "30s"}, {"watch", "job"}, {"lock", "job", "--", "true"},
	} {
		code, _, stderr := lockctl(t, append([]string{"--endpoints", m.Addr(), "--timeout", "5s"}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, "speaks TLS") || !strings.Contains(stderr, "--cacert") ||
			strings.Contains(stderr, "Client sent") {
			t.Errorf("lockctl %s against TLS without --cacert: exit %d %q, want %d naming TLS and --cacert",
				strings.Join(args, " "), code, stderr, exitUsage)
		}
	}
}
