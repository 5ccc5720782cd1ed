package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// TestNullIsNoValue: goal — an explicit null is refused for every field of
// every body, where encoding/json alone would leave the zero value in its
// place ("mode":null acquiring exclusive, "ttl":null on a renew reusing
// the lease's TTL), and so is a null inside a value. Method: for each
// field of each lock endpoint, a valid body with that one field set to
// null must get 400 invalid_argument naming the field, with the lock
// table unchanged; a null inside acquire_many's resources too.
func TestNullIsNoValue(t *testing.T) {
	ts, c := newServer(t)
	code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"held","client_id":"a","ttl":60000}`)
	var held api.AcquireResponse
	if err := json.Unmarshal(b, &held); err != nil || code != 200 || !held.Granted {
		t.Fatalf("warm-up acquire: %d %s", code, b)
	}
	before := lockCounts(c.Nodes[0])
	valid := map[string]map[string]string{
		api.PathAcquire: {"resource": `"r"`, "client_id": `"a"`, "ttl": `1000`, "mode": `"shared"`, "wait": `0`,
			"request_id": `"q"`, "policy": `"fifo"`},
		api.PathAcquireMany: {"resources": `["m1","m2"]`, "client_id": `"a"`, "ttl": `1000`, "mode": `"shared"`, "wait": `0`,
			"request_id": `"q"`, "policy": `"fifo"`, "order": `"canonical"`},
		api.PathRelease: {"resource": `"held"`, "lease_id": `"` + held.LeaseID + `"`},
		api.PathRenew:   {"resource": `"held"`, "lease_id": `"` + held.LeaseID + `"`, "ttl": `60000`},
	}
	body := func(fields map[string]string, null string) string {
		var parts []string
		for k, v := range fields {
			if k == null {
				v = "null"
			}
			parts = append(parts, `"`+k+`":`+v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	for path, fields := range valid {
		for field := range fields {
			t.Run(path+" "+field, func(t *testing.T) {
				code, b := do(t, "POST", ts.URL+path, body(fields, field))
				wantInvalid(t, code, b)
				if !strings.Contains(string(b), `\"`+field+`\" is or holds null`) {
					t.Errorf("error %s does not name the null field %q", b, field)
				}
			})
		}
	}
	t.Run("null inside resources", func(t *testing.T) {
		code, b := do(t, "POST", ts.URL+api.PathAcquireMany, `{"resources":["m1",null],"client_id":"a","ttl":1000}`)
		wantInvalid(t, code, b)
	})
	if after := lockCounts(c.Nodes[0]); after != before {
		t.Fatalf("a null field changed the lock table: %+v, was %+v", after, before)
	}
}
