package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// TestOtherSpellingsOfAPathAreNotFound: goal — an endpoint has one
// spelling: "//lock/acquire", "/lock/../lock/acquire" and the like get the
// documented 404 not_found JSON, where net/http's ServeMux answered an
// empty redirect to the cleaned path (which a client following it turned
// into a grant). Method: POST a valid acquire to each spelling with a
// client that does not follow redirects; each must be 404 not_found and
// grant nothing; the canonical path still grants.
func TestOtherSpellingsOfAPathAreNotFound(t *testing.T) {
	ts, c := newServer(t)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	body := `{"resource":"r","client_id":"a","ttl":60000}`
	before := lockCounts(c.Nodes[0])
	for _, path := range []string{
		"//lock/acquire", "/lock//acquire", "/lock/../lock/acquire", "/lock/./acquire", "/./lock/acquire",
		"/lock/acquire/", "/lock/acquire/.", "/lock/%61cquire", "/lock%2Facquire", "//cluster", "/x/../livez",
	} {
		resp, err := hc.Post(ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		var e api.Error
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || err != nil || e.Code != api.CodeNotFound || !strings.Contains(e.Error, "no such endpoint") {
			t.Errorf("POST %s = %d (Location %q) %+v, want 404 not_found JSON", path, resp.StatusCode, resp.Header.Get("Location"), e)
		}
	}
	if after := lockCounts(c.Nodes[0]); after != before {
		t.Fatalf("a non-canonical path changed the lock table: %+v, was %+v", after, before)
	}
	if code, b := do(t, "POST", ts.URL+api.PathAcquire, body); code != http.StatusOK {
		t.Fatalf("canonical path: %d %s", code, b)
	}
}
