package checker

import (
	"testing"

	"github.com/lockstep/lockstep/models"
)

// TestRequestIDReusedNeedsAnotherRequest: goal — a request_id_reused answer
// is flagged unless that request id was really used for another request.
// Method: the same answer with and without an earlier acquire for another
// resource under the same (client, request id).
func TestRequestIDReusedNeedsAnotherRequest(t *testing.T) {
	reused := Op{ClientID: 1, Call: 10, Return: 20,
		Input:  models.LockInput{Op: models.Acquire, Resource: "y", ClientID: "c", RequestID: "q", TTL: 5},
		Output: models.LockOutput{Code: models.CodeRequestIDReused}}
	first := Op{ClientID: 0, Call: 0, Return: 5,
		Input:  models.LockInput{Op: models.Acquire, Resource: "x", ClientID: "c", RequestID: "q", TTL: 5},
		Output: models.LockOutput{LogTime: 1}}
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"justified", []Op{first, reused}, 0},
		{"unjustified", []Op{reused}, 1},
	} {
		var f findings
		checkRequestIDs(&History{Ops: tc.ops}, &f)
		if len(f.list) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(f.list), f.list, tc.want)
		}
	}
}

// TestReuseAnswersAfterAGrant: goal — once an id was granted, a repeat of
// the same request must not be refused as reused, and another request
// under it must be. Method: a grant, then a later acquire under the id
// answered each way, for the same and for another resource of the group;
// pairs in other groups or past the dedupe window are not judged.
func TestReuseAnswersAfterAGrant(t *testing.T) {
	in := func(resource string) models.LockInput {
		return models.LockInput{Op: models.Acquire, Resource: resource, ClientID: "c1", RequestID: "7", TTL: 5e9}
	}
	granted := Op{ClientID: 0, Call: 0, Return: 10, Input: in("x"),
		Output: models.LockOutput{Granted: true, LeaseID: "L", LogTime: 100}}
	later := func(resource string, out models.LockOutput) Op {
		return Op{ClientID: 1, Call: 20, Return: 30, Input: in(resource), Output: out}
	}
	reused := models.LockOutput{Code: models.CodeRequestIDReused}
	ended := models.LockOutput{Code: models.CodeLeaseEnded, LeaseID: "L", LogTime: 200}
	trace := []TraceEvent{{Resource: "x", Group: 0}, {Resource: "y", Group: 0}, {Resource: "z", Group: 1}}
	entries := []Entry{{Group: 0, Index: 1, LogTime: 100, At: 5}, {Group: 0, Index: 2, LogTime: 200, At: 25},
		{Group: 1, Index: 1, LogTime: 200, At: 25}}
	for _, tc := range []struct {
		name    string
		x       Op
		entries []Entry
		want    int
	}{
		{"duplicate answered ended", later("x", ended), entries, 0},
		// The older rule (no other request used the id) fires too.
		{"duplicate refused as reused", later("x", reused), entries, 2},
		{"other resource refused", later("y", reused), entries, 0},
		{"other resource answered with the first lease", later("y", ended), entries, 1},
		{"other resource answered not granted", later("y", models.LockOutput{LogTime: 200}), entries, 1},
		{"other group is another state machine", later("z", models.LockOutput{Granted: true, LeaseID: "M", LogTime: 200}), entries, 0},
		{"past the window", later("y", ended), []Entry{{Group: 0, Index: 1, LogTime: 100, At: 5},
			{Group: 0, Index: 2, LogTime: 100 + int64(dedupeTrust), At: 25}}, 0},
	} {
		var f findings
		checkRequestIDs(&History{Ops: []Op{granted, tc.x}, Trace: trace, Entries: tc.entries}, &f)
		if len(f.list) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(f.list), f.list, tc.want)
		}
	}
}
