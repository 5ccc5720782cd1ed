package checker

import (
	"fmt"
	"testing"

	"github.com/lockstep/lockstep/core/placement"
	"github.com/lockstep/lockstep/models"
)

// TestRequestIDReusedNeedsAnotherRequest: goal — a request_id_reused answer
// is flagged unless that request id was really used for another request.
// Method: the same answer with and without an earlier acquire for another
// resource under the same (client, request id).
func TestRequestIDReusedNeedsAnotherRequest(t *testing.T) {
	reused := Op{ClientID: 1, Call: 10, Return: 20,
		Input:  models.LockInput{Op: models.Acquire, Resource: "y", ClientID: "c", RequestID: "q", TTLNs: 5},
		Output: models.LockOutput{Code: models.CodeRequestIDReused}}
	first := Op{ClientID: 0, Call: 0, Return: 5,
		Input:  models.LockInput{Op: models.Acquire, Resource: "x", ClientID: "c", RequestID: "q", TTLNs: 5},
		Output: models.LockOutput{LogTimeNs: 1}}
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"justified", []Op{first, reused}, 0},
		{"unjustified", []Op{reused}, 1},
	} {
		var f findings
		checkRequestIDs(&History{Ops: tc.ops}, Options{}, &f)
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
		return models.LockInput{Op: models.Acquire, Resource: resource, ClientID: "c1", RequestID: "7", TTLNs: 5e9}
	}
	granted := Op{ClientID: 0, Call: 0, Return: 10, Input: in("x"),
		Output: models.LockOutput{Granted: true, LeaseID: "L", LogTimeNs: 100}}
	later := func(resource string, out models.LockOutput) Op {
		return Op{ClientID: 1, Call: 20, Return: 30, Input: in(resource), Output: out}
	}
	reused := models.LockOutput{Code: models.CodeRequestIDReused}
	ended := models.LockOutput{Code: models.CodeLeaseEnded, LeaseID: "L", LogTimeNs: 200}
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
		{"other resource answered not granted", later("y", models.LockOutput{LogTimeNs: 200}), entries, 1},
		{"other group is another state machine", later("z", models.LockOutput{Granted: true, LeaseID: "M", LogTimeNs: 200}), entries, 0},
		{"past the window", later("y", ended), []Entry{{Group: 0, Index: 1, LogTime: 100, At: 5},
			{Group: 0, Index: 2, LogTime: 100 + int64(dedupeTrust), At: 25}}, 0},
	} {
		var f findings
		checkRequestIDs(&History{Ops: []Op{granted, tc.x}, Trace: trace, Entries: tc.entries}, Options{}, &f)
		if len(f.list) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(f.list), f.list, tc.want)
		}
	}
}

// TestRequestIDsAcrossShards: goal — the request-id check judges a reused
// id by the rule the README states: dedupe is per shard. Under one
// (client, request id), another resource on the same shard must be
// refused request_id_reused and never granted a second lease; one on
// another shard is an independent request, which must not be refused as
// reused (unless a same-shard use justifies it). The shards come from
// Options.Shards and core/placement alone, with no trace to place them.
// Method: a grant, then a later acquire under the same id for a resource
// on the same or the other of two shards, answered each way; the broken
// variants (a same-shard second grant, a cross-shard refusal) must be
// flagged.
func TestRequestIDsAcrossShards(t *testing.T) {
	const shards = 2
	on := func(s placement.Shard, skip string) string {
		for i := 0; ; i++ {
			if r := fmt.Sprintf("r%d", i); r != skip && placement.Of(r, shards) == s {
				return r
			}
		}
	}
	a1 := on(1, "")
	a2, b := on(1, a1), on(2, "")
	in := func(resource string) models.LockInput {
		return models.LockInput{Op: models.Acquire, Resource: resource, ClientID: "c1", RequestID: "7", TTLNs: 5e9}
	}
	granted := Op{ClientID: 0, Call: 0, Return: 10, Input: in(a1), Output: models.LockOutput{Granted: true, LeaseID: "L", LogTimeNs: 100}}
	later := func(resource string, out models.LockOutput) Op {
		return Op{ClientID: 1, Call: 20, Return: 30, Input: in(resource), Output: out}
	}
	reused := models.LockOutput{Code: models.CodeRequestIDReused}
	second := models.LockOutput{Granted: true, LeaseID: "M", LogTimeNs: 200}
	entries := []Entry{{Group: 1, Index: 1, LogTime: 100, At: 5}, {Group: 1, Index: 2, LogTime: 200, At: 25},
		{Group: 2, Index: 1, LogTime: 200, At: 25}}
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"same shard refused as reused", []Op{granted, later(a2, reused)}, 0},
		{"same shard granted a second lease", []Op{granted, later(a2, second)}, 1},
		{"other shard granted: an independent request", []Op{granted, later(b, second)}, 0},
		{"other shard refused as reused", []Op{granted, later(b, reused)}, 1},
		{"other shard refused, justified by a same-shard use", []Op{granted,
			{ClientID: 2, Call: 12, Return: 14, Input: in(on(2, b)), Output: models.LockOutput{LogTimeNs: 150}}, later(b, reused)}, 0},
	} {
		var f findings
		checkRequestIDs(&History{Ops: tc.ops, Entries: entries}, Options{Shards: shards}, &f)
		if len(f.list) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(f.list), f.list, tc.want)
		}
	}
}
