package main

import (
	"encoding/json"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// TestRequestIDFlagNamesOneResource: goal — --request-id names one acquire
// of one resource, as the Go client's RequestID does: the same id for
// another resource takes it too (never request_id_reused), and the same
// id and resource again answers with the first lease (a retried command
// is idempotent). Method: one member with one shard, where every resource
// shares the shard and a raw id reused for another resource would be
// refused; acquire a, b and {t}c+{t}d (acquire-many) under one id, then a
// again.
func TestRequestIDFlagNamesOneResource(t *testing.T) {
	ep := startMember(t)
	acquire := func(args ...string) (int, api.AcquireResponse, string) {
		t.Helper()
		code, out, errOut := lockctl(t, append([]string{"--endpoints", ep, "--client-id", "A"}, args...)...)
		var res api.AcquireResponse
		_ = json.Unmarshal([]byte(out), &res)
		return code, res, errOut
	}
	code, first, errOut := acquire("acquire", "a", "--ttl", "30s", "--request-id", "job-1")
	if code != exitOK || !first.Granted {
		t.Fatalf("acquire a: exit %d %+v %q", code, first, errOut)
	}
	if code, res, errOut := acquire("acquire", "b", "--ttl", "30s", "--request-id", "job-1"); code != exitOK || !res.Granted || res.LeaseID == first.LeaseID {
		t.Fatalf("acquire b under a's id: exit %d %+v %q", code, res, errOut)
	}
	if code, _, errOut := acquire("acquire-many", "{t}c", "{t}d", "--ttl", "30s", "--request-id", "job-1"); code != exitOK {
		t.Fatalf("acquire-many under a's id: exit %d %q", code, errOut)
	}
	if code, res, errOut := acquire("acquire", "a", "--ttl", "30s", "--request-id", "job-1"); code != exitOK || res.LeaseID != first.LeaseID {
		t.Fatalf("acquire a again under its id: exit %d %+v %q, want lease %s", code, res, errOut, first.LeaseID)
	}
}
