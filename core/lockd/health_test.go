package lockd_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lockd"
)

// TestHealthListenerServesProbesWithoutClientCertificate: goal — with the
// API requiring client certificates, a probe that has none (a kubelet's
// httpGet) still reaches /livez, /readyz and /healthz on the plaintext
// health listener, and that listener serves nothing else (no API, no
// /metrics). Method: a TLS cluster with --health-addr on every member;
// check the HTTPS port refuses a client without a certificate, wait for
// /readyz 200 on the health port over plain HTTP, then GET every other
// path there and expect a JSON 404 not_found.
func TestHealthListenerServesProbesWithoutClientCertificate(t *testing.T) {
	p := issuePKI(t, []string{"n1", "n2", "n3"}, []string{"app"})
	c := startClusterTB(t, lockd.LogStoreWAL, func(i int, o *lockd.Options) {
		p.member(i, o)
		o.HealthAddr = "127.0.0.1:0"
	})
	m := c.members[0]
	if _, err := acquireHTTPS(httpsClient(p.ca, nil), m.URL(), "x"); !refusedByTLS(err) {
		t.Fatalf("HTTPS without a client certificate: %v; want the handshake refused", err)
	}
	if m.HealthAddr() == "" {
		t.Fatal("no health listener bound")
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + m.HealthAddr()
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := plain.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	waitFor(t, func() bool { code, _ := get(api.PathReady); return code == http.StatusOK })
	for _, path := range []string{api.PathLive, api.PathReady, api.PathHealth} {
		code, body := get(path)
		var h api.Health
		if err := json.Unmarshal(body, &h); code != http.StatusOK || err != nil || h.Status != "ok" || h.Node != "n1" {
			t.Errorf("GET %s on the health listener: %d %s", path, code, body)
		}
	}
	for _, path := range []string{api.PathMetrics, api.PathStatus + "?resource=x", api.PathCluster, api.PathAcquire,
		api.PathACLTokens, api.PathWatch + "?resource=x", "/", "/readyz/", "/debug/pprof/"} {
		code, body := get(path)
		var e api.Error
		if err := json.Unmarshal(body, &e); code != http.StatusNotFound || err != nil || e.Code != api.CodeNotFound {
			t.Errorf("GET %s on the health listener: %d %s; want 404 not_found", path, code, body)
		}
	}
	resp, err := plain.Post(base+api.PathAcquire, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST %s on the health listener: %d, want 404", api.PathAcquire, resp.StatusCode)
	}
}
