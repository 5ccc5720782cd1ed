package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/gateway"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/tlsconf"
)

// TestMemberNeedsCertificatesOrInsecure: goal — a member started with
// production flags and no certificates refuses to start, naming both ways
// out, as does a gateway; half a certificate set or certificates with
// --insecure are refused too. Method: run lockd in-process with each
// command line and read the exit status and stderr.
func TestMemberNeedsCertificatesOrInsecure(t *testing.T) {
	// The member port is taken, so a member that wrongly started would
	// fail at once (exit 1, another message) instead of serving.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	member := []string{"--id", "n1", "--raft-addr", addr, "--data-dir", t.TempDir(), "--peers", "n1=" + addr}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{member, []string{"--tls-cert", "--tls-ca", "--insecure", "lockd certs"}},
		{[]string{"gateway", "--join", "127.0.0.1:7070", "--http-addr", addr}, []string{"--tls-cert", "--insecure"}},
		{append(member, "--tls-cert", "c.pem"), []string{"go together"}},
		{append(member, "--insecure", "--tls-ca", "ca.pem"), []string{"--insecure serves plaintext"}},
		{append(member, "--tls-cert", "no.pem", "--tls-key", "no-key.pem", "--tls-ca", "ca.pem"), []string{"no.pem"}},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		for _, w := range tc.want {
			if code != 2 || !strings.Contains(stderr.String(), w) {
				t.Errorf("lockd %v: exit %d, stderr %q; want 2 mentioning %q", tc.args, code, stderr.String(), w)
			}
		}
	}
	if _, err := parseMember(append(member, "--insecure")); err != nil {
		t.Fatalf("--insecure member refused: %v", err)
	}
}

// TestCertsMakeAWorkingTLSCluster: goal — lockd certs writes a CA, node,
// gateway and client certificates (keys 0600) that the --tls-* flags of
// three members and a gateway take as they are, and the cluster then
// grants over HTTPS on a member and through the gateway; a second run
// keeps the CA and the certificates already there, says so, and makes the
// missing ones. Method: run lockd
// certs in-process, parse member and gateway command lines naming its
// files, start them, and acquire with the client certificate.
func TestCertsMakeAWorkingTLSCluster(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"certs", "--dir", dir, "--nodes", "n1,n2,n3", "--gateways", "gw", "--clients", "app"}, &stdout, &stderr); code != 0 {
		t.Fatalf("lockd certs: exit %d: %s", code, stderr.String())
	}
	for _, f := range []string{"ca-key.pem", "n1-key.pem", "gw-key.pem", "app-key.pem"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", f, err, st.Mode().Perm())
		}
	}
	if strings.Contains(stdout.String(), "kept") || !strings.Contains(stdout.String(), "client app made") {
		t.Errorf("first lockd certs says %q, want every file made", stdout.String())
	}
	ca, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	app, _ := os.ReadFile(filepath.Join(dir, "app.pem"))
	stdout.Reset()
	stderr.Reset()
	// Run twice: what is there is kept (and said so), the missing is made.
	if code := run([]string{"certs", "--dir", dir, "--clients", "app,app2"}, &stdout, &stderr); code != 0 {
		t.Errorf("second lockd certs: exit %d %q", code, stderr.String())
	}
	for _, want := range []string{"CA kept", "client app kept", "client app2 made"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("second lockd certs says %q, want %q", stdout.String(), want)
		}
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "ca.pem")); !bytes.Equal(ca, again) {
		t.Error("a second lockd certs replaced the CA")
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "app.pem")); !bytes.Equal(app, again) {
		t.Error("a second lockd certs replaced app.pem")
	}

	f := func(name string) string { return filepath.Join(dir, name) }
	ids := []string{"n1", "n2", "n3"}
	var raft, httpAddrs, peers []string
	for _, id := range ids {
		raft, httpAddrs = append(raft, freePort(t)), append(httpAddrs, freePort(t))
		peers = append(peers, id+"="+raft[len(raft)-1])
	}
	for i, id := range ids {
		opts, err := parseMember([]string{"--id", id, "--raft-addr", raft[i], "--http-addr", httpAddrs[i],
			"--data-dir", filepath.Join(t.TempDir(), id), "--peers", strings.Join(peers, ","), "--bootstrap",
			"--tls-cert", f(id + ".pem"), "--tls-key", f(id + "-key.pem"), "--tls-ca", f("ca.pem")})
		if err != nil {
			t.Fatal(err)
		}
		opts.Logger = slog.New(slog.DiscardHandler)
		m, err := lockd.Start(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = m.Stop(ctx)
		})
	}
	gc, err := parseGateway([]string{"--join", strings.Join(httpAddrs, ","), "--http-addr", freePort(t),
		"--tls-cert", f("gw.pem"), "--tls-key", f("gw-key.pem"), "--tls-ca", f("ca.pem"),
		"--upstream-cert", f("app.pem"), "--upstream-key", f("app-key.pem")})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Start(context.Background(), gc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Stop(context.Background()) })

	hc := tlsHTTPClient(t, f("ca.pem"), f("app.pem"), f("app-key.pem"))
	for _, base := range []string{"https://" + httpAddrs[1], g.URL()} {
		waitUntil(t, 20*time.Second, func() bool {
			ok, err := tryAcquire(hc, base, "certs-"+base)
			if err != nil {
				t.Logf("acquire via %s: %v", base, err)
			}
			return ok
		})
	}
	// A client certificate of another CA is refused by the gateway too.
	other := filepath.Join(t.TempDir(), "other")
	if code := run([]string{"certs", "--dir", other, "--clients", "intruder"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("lockd certs: exit %d", code)
	}
	intruder := tlsHTTPClient(t, f("ca.pem"), filepath.Join(other, "intruder.pem"), filepath.Join(other, "intruder-key.pem"))
	if ok, err := tryAcquire(intruder, g.URL(), "intruder"); err == nil {
		t.Errorf("gateway served a foreign client certificate (granted=%v)", ok)
	}
}

// TestClientCAFlag: goal — --tls-client-ca admits API clients of a
// second CA while the members' CA stays accepted (a follower asks its
// leader's API), and the member port keeps trusting the members' CA
// only. Method: load a member's flags and verify certificates of both
// CAs against the pools they produce.
func TestClientCAFlag(t *testing.T) {
	nodes, clients := filepath.Join(t.TempDir(), "nodes"), filepath.Join(t.TempDir(), "clients")
	for _, args := range [][]string{{"certs", "--dir", nodes, "--nodes", "n1"}, {"certs", "--dir", clients, "--clients", "app"}} {
		if code := run(args, io.Discard, io.Discard); code != 0 {
			t.Fatalf("lockd %v: exit %d", args, code)
		}
	}
	a := tlsArgs{cert: filepath.Join(nodes, "n1.pem"), key: filepath.Join(nodes, "n1-key.pem"),
		ca: filepath.Join(nodes, "ca.pem"), clientCA: filepath.Join(clients, "ca.pem")}
	m, err := a.member()
	if err != nil {
		t.Fatal(err)
	}
	app, err := tlsconf.LoadCert(filepath.Join(clients, "app.pem"), filepath.Join(clients, "app-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	asClient := x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, tc := range []struct {
		name string
		leaf *x509.Certificate
		pool *x509.CertPool
		ok   bool
	}{
		{"client cert on the API", app.Leaf, m.APIClients, true},
		{"node cert on the API", m.Cert.Leaf, m.APIClients, true},
		{"client cert on the member port", app.Leaf, m.CA, false},
	} {
		opts := asClient
		opts.Roots = tc.pool
		if _, err := tc.leaf.Verify(opts); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func tlsHTTPClient(t *testing.T, caFile, certFile, keyFile string) *http.Client {
	t.Helper()
	ca, err := tlsconf.LoadPool(caFile)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tlsconf.LoadCert(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsconf.Client(ca, &cert)}}
}

// tryAcquire is one try-lock through base: granted or not, or the error.
func tryAcquire(hc *http.Client, base, resource string) (bool, error) {
	b, _ := json.Marshal(api.AcquireRequest{Resource: resource, ClientID: "tls-test", TTLMs: 60_000})
	resp, err := hc.Post(base+api.PathAcquire, "application/json", bytes.NewReader(b))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var ar api.AcquireResponse
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		return false, fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
	}
	return ar.Granted, json.NewDecoder(resp.Body).Decode(&ar)
}

// TestDevTLS: goal — lockd dev --tls serves TLS on its members and its
// gateway with a throwaway CA, prints where the client certificate is and
// a curl line using it, refuses plaintext, and removes the certificates on
// exit; plain lockd dev says it is plaintext. Method: run the built
// binary on random ports, read its banner, acquire over HTTPS with the
// printed files, then SIGTERM it.
func TestDevTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts lockd dev")
	}
	bin := buildLockd(t)
	// Below the kernel's ephemeral range (32768-60999 here), where outgoing
	// connections of parallel tests could hold one of the ports.
	base := 20000 + rand.IntN(12000)/10*10
	args := []string{"dev", "--tls", "--nodes", "3", "--shards", "1", "--http-port", fmt.Sprint(base), "--raft-port", fmt.Sprint(base + 3),
		"--grpc-port", "0", "--gateway-addr", fmt.Sprintf("127.0.0.1:%d", base+6)}
	banner := startDev(t, bin, args)
	m := regexp.MustCompile(`CA (\S+), client certificate (\S+), key (\S+)`).FindStringSubmatch(banner)
	if m == nil || !strings.Contains(banner, "curl -s --cacert "+m[1]+" --cert "+m[2]+" --key "+m[3]+" -XPOST https://") {
		t.Fatalf("banner lacks the client files or the curl line:\n%s", banner)
	}
	hc := tlsHTTPClient(t, m[1], m[2], m[3])
	for _, u := range []string{fmt.Sprintf("https://127.0.0.1:%d", base), fmt.Sprintf("https://127.0.0.1:%d", base+6)} {
		if !strings.Contains(banner, u) {
			t.Errorf("banner does not list %s", u)
		}
		waitUntil(t, 20*time.Second, func() bool { ok, _ := tryAcquire(hc, u, "dev-"+u); return ok })
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/livez", base))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("lockd dev --tls answered plaintext HTTP")
		}
	}
	stopDev(t)
	if _, err := os.Stat(filepath.Dir(m[1])); err == nil {
		t.Errorf("the throwaway CA dir %s outlived lockd dev", filepath.Dir(m[1]))
	}

	plain := startDev(t, bin, []string{"dev", "--nodes", "1", "--shards", "1", "--http-port", fmt.Sprint(base + 10),
		"--raft-port", fmt.Sprint(base + 11), "--grpc-port", "0", "--gateway-addr", ""})
	if !strings.Contains(plain, "plaintext") || !strings.Contains(plain, "curl -s -XPOST http://") {
		t.Errorf("plain lockd dev banner does not say plaintext or lacks the http curl line:\n%s", plain)
	}
	plainURL := fmt.Sprintf("http://127.0.0.1:%d", base+10)
	waitUntil(t, 20*time.Second, func() bool { ok, _ := tryAcquire(httpc, plainURL, "plain"); return ok })
	stopDev(t)
}

// devProc is the running lockd dev of TestDevTLS.
var devProc *exec.Cmd

// startDev runs bin with args and returns its banner (stdout up to the
// curl line).
func startDev(t *testing.T, bin string, args []string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	devProc = cmd
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var banner strings.Builder
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				_ = cmd.Wait() // stderr's copier is done only then
				t.Fatalf("lockd dev exited before its banner:\n%s\nstderr:\n%s", banner.String(), stderr.String())
			}
			banner.WriteString(l + "\n")
			if strings.Contains(l, "try: curl") {
				go func() {
					for range lines {
					}
				}()
				return banner.String()
			}
		case <-timeout:
			t.Fatalf("no banner within 60s:\n%s", banner.String())
		}
	}
}

func stopDev(t *testing.T) {
	t.Helper()
	_ = devProc.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- devProc.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("lockd dev did not exit cleanly: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("lockd dev did not exit within 30s of SIGTERM")
	}
}
