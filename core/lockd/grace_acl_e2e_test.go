package lockd_test

import (
	"net/http"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// TestNamespaceDefaultGrace: goal — a namespace's quota may set a default
// grace window, which an acquire there gets when it asks for none (cut to
// its TTL), and never overrides a grace asked for; other namespaces get
// none. Method: three members with ACLs; the quota set through the admin
// API, then acquires and status.
func TestNamespaceDefaultGrace(t *testing.T) {
	c := startACLCluster(t)
	q := api.Quota{Namespace: "g", DefaultGraceMs: 5000}
	if code, e, _ := call(t, http.MethodPost, c.url(1)+api.PathACLQuota, rootSecret, q, nil); code != http.StatusOK {
		t.Fatalf("set quota %+v: %d %+v", q, code, e)
	}
	waitFor(t, func() bool {
		got, ok := c.members[0].Host.Meta().ACL().Quota(q.Namespace)
		return ok && api.Quota(got) == q
	})
	for _, tc := range []struct {
		resource   string
		ttl, grace int64
		want       int64
	}{
		{"g:default", 60_000, 0, 5000},
		{"g:cut-to-ttl", 1000, 0, 1000},
		{"g:asked", 60_000, 100, 100},
		{"n:other-namespace", 60_000, 0, 0},
	} {
		var out api.AcquireResponse
		code, e, _ := call(t, http.MethodPost, c.url(0)+api.PathAcquire, rootSecret,
			api.AcquireRequest{Resource: tc.resource, ClientID: "a", TTLMs: tc.ttl, GraceMs: tc.grace}, &out)
		if code != http.StatusOK || !out.Granted {
			t.Fatalf("acquire %s: %d %+v %+v", tc.resource, code, e, out)
		}
		if st := c.status(2, tc.resource); len(st.Holders) != 1 || st.Holders[0].GraceMs != tc.want {
			t.Errorf("%s (ttl %d, grace %d): holders %+v, want grace %d", tc.resource, tc.ttl, tc.grace, st.Holders, tc.want)
		}
	}
}
