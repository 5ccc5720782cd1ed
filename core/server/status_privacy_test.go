package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// TestStatusHidesLeaseIDs: goal — a lease id is a capability (whoever
// knows it may renew or release the lease), so GET /lock/status must not
// print it; holders show a fingerprint instead (first 8 hex chars of the
// SHA-256 of the lease id), which the holder can match against its own id.
// Method: acquire, read status through the leader and stale, and check the
// raw bodies never contain the id and carry the expected fingerprint.
func TestStatusHidesLeaseIDs(t *testing.T) {
	ts, _ := newServer(t)
	code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"r","client_id":"a","ttl":60000}`)
	var got api.AcquireResponse
	if err := json.Unmarshal(b, &got); err != nil || code != 200 || len(got.LeaseID) != 32 {
		t.Fatalf("acquire = %d %s", code, b)
	}
	sum := sha256.Sum256([]byte(got.LeaseID))
	want := hex.EncodeToString(sum[:])[:8]
	for _, q := range []string{"resource=r", "resource=r&stale=true"} {
		code, b := do(t, "GET", ts.URL+api.PathStatus+"?"+q, "")
		if code != 200 {
			t.Fatalf("status %s = %d %s", q, code, b)
		}
		if strings.Contains(strings.ToLower(string(b)), got.LeaseID) || strings.Contains(string(b), `"lease_id"`) {
			t.Fatalf("status %s prints the lease id: %s", q, b)
		}
		var st struct {
			Holders []map[string]any `json:"holders"`
		}
		if err := json.Unmarshal(b, &st); err != nil || len(st.Holders) != 1 || st.Holders[0]["lease_fingerprint"] != want {
			t.Fatalf("status %s = %s, want one holder with lease_fingerprint %q", q, b, want)
		}
	}
}
