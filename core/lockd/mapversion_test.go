package lockd_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// Goal: every reply of a member's API routes — grants, errors, reads, a
// refused method — says which shard map version the member routes by
// (api.HeaderMapVersion), so a gateway or client with an older map learns
// it from any reply. Method: three members, once all have published their
// addresses (the map stops changing), one request of each kind to each.
func TestRepliesCarryMapVersion(t *testing.T) {
	members, _ := startSharded(t, 3, 3)
	waitFor(t, func() bool {
		for _, m := range members {
			for _, o := range members {
				if m.Host.APIAddr(o.Host.ID()) != o.Addr() || m.Host.MapVersion() != members[0].Host.MapVersion() {
					return false
				}
			}
		}
		return true
	})
	requests := []struct {
		name, method, path, body string
		status                   int
	}{
		{"acquire", http.MethodPost, api.PathAcquire, `{"resource":"mv","client_id":"c","ttl":60000}`, http.StatusOK},
		{"release of an unknown lease", http.MethodPost, api.PathRelease, `{"resource":"mv","lease_id":"` + strings.Repeat("1", 32) + `"}`, http.StatusConflict},
		{"bad input", http.MethodPost, api.PathAcquire, `{"resource":"mv"}`, http.StatusBadRequest},
		{"status", http.MethodGet, api.PathStatus + "?resource=mv", "", http.StatusOK},
		{"cluster", http.MethodGet, api.PathCluster, "", http.StatusOK},
		{"wrong method", http.MethodGet, api.PathAcquire, "", http.StatusMethodNotAllowed},
	}
	for _, m := range members {
		want := strconv.FormatUint(m.Host.MapVersion(), 10)
		for _, rq := range requests {
			req, err := http.NewRequest(rq.method, "http://"+m.Addr()+rq.path, strings.NewReader(rq.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s on %s: %v", rq.name, m.Host.ID(), err)
			}
			resp.Body.Close()
			// Leaders may still be spreading: a request caught by a
			// transfer is answered 503 or 504, which must carry the header
			// too.
			if resp.StatusCode != rq.status && resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusGatewayTimeout {
				t.Errorf("%s on %s: status %d, want %d", rq.name, m.Host.ID(), resp.StatusCode, rq.status)
			}
			if got := resp.Header.Get(api.HeaderMapVersion); got != want || want == "0" {
				t.Errorf("%s on %s: %s = %q, want %s (a version > 0)", rq.name, m.Host.ID(), api.HeaderMapVersion, got, want)
			}
		}
	}
}
