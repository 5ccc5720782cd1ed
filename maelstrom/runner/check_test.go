package runner

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/models"
)

func intp(v int) *int { return &v }

// op builds a history entry; times are ms.
func op(proc int, f, req, typ string, invokeMs, completeMs int64, reply string, code *int) Op {
	o := Op{Process: proc, Client: "c1", Node: "n0", F: f, Request: []byte(req), Type: typ,
		Invoke: invokeMs * int64(time.Millisecond), Complete: completeMs * int64(time.Millisecond), Code: code}
	if reply != "" {
		o.Reply = []byte(reply)
	}
	return o
}

func checkOps(t *testing.T, workload string, ops ...Op) *Verdict {
	t.Helper()
	for i := range ops {
		ops[i].Index = i
	}
	v, _, err := Check(context.Background(), &History{Workload: workload, Ops: ops}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestKVCheck checks how the runner reads lin-kv outcomes. Goal: a stale
// read is flagged, an indefinite write may have happened, and a definite
// error means the write did not happen (so reading its value is flagged).
// Method: tiny hand-written histories with a known verdict each.
func TestKVCheck(t *testing.T) {
	write := `{"type":"write","key":1,"value":1}`
	read := `{"type":"read","key":1}`
	cases := []struct {
		name  string
		first Op
		read  string
		want  string
	}{
		{"fresh read", op(0, "write", write, TypeOK, 0, 10, `{"type":"write_ok"}`, nil), `{"type":"read_ok","value":1}`, Valid},
		{"stale read", op(0, "write", write, TypeOK, 0, 10, `{"type":"write_ok"}`, nil), `{"type":"read_ok","value":0}`, Invalid},
		{"indefinite write seen", op(0, "write", write, TypeInfo, 0, 10, "", nil), `{"type":"read_ok","value":1}`, Valid},
		{"definite failure seen", op(0, "write", write, TypeFail, 0, 10, `{"type":"error","code":11}`, intp(11)), `{"type":"read_ok","value":1}`, Invalid},
		{"missing key after a failed write", op(0, "write", write, TypeFail, 0, 10, `{"type":"error","code":11}`, intp(11)), `{"type":"error","code":20}`, Valid},
	}
	for _, c := range cases {
		typ, code := TypeOK, (*int)(nil)
		if strings.Contains(c.read, `"error"`) {
			typ, code = TypeFail, intp(20)
		}
		v := checkOps(t, WorkloadLinKV, c.first, op(1, "read", read, typ, 20, 30, c.read, code))
		if v.Result != c.want {
			t.Errorf("%s: %s, want %s (%v)", c.name, v.Result, c.want, v.Violations)
		}
	}
}

// TestLockCheck checks the lock workload's judgement end to end from a
// runner history. Goal: two clients holding one exclusive lock at once is
// flagged; a grant after a release is not. Method: hand-written replies
// with log times, as maelstrom-lockstep sends them.
func TestLockCheck(t *testing.T) {
	acq := `{"type":"acquire","resource":"r","client":"a","ttl":1000}`
	grant := func(id string, token, at int) string {
		return `{"type":"acquire_ok","granted":true,"lease_id":"` + id + `","fencing_token":` + strconv.Itoa(token) +
			`,"expires_at_ns":` + strconv.Itoa(at+1000) + `000000,"log_time_ns":` + strconv.Itoa(at) + `000000}`
	}
	release := `{"type":"release","resource":"r","lease_id":"A"}`
	overlap := checkOps(t, WorkloadLock,
		op(0, "acquire", acq, TypeOK, 0, 10, grant("A", 1, 5), nil),
		op(1, "acquire", acq, TypeOK, 20, 30, grant("B", 2, 25), nil))
	if overlap.Result != Invalid {
		t.Errorf("overlapping exclusive grants: %s, want invalid", overlap.Result)
	}
	// An empty span (D's release is in doubt) first on r1, after a live
	// holder on r0: r0's holder must not be held against r1's.
	acqR1 := strings.Replace(acq, `"r"`, `"r1"`, 1)
	boundary := checkOps(t, WorkloadLock,
		op(0, "acquire", strings.Replace(acq, `"r"`, `"r0"`, 1), TypeOK, 0, 10, grant("X", 1, 5), nil),
		op(1, "acquire", acqR1, TypeOK, 0, 10, grant("D", 2, 8), nil),
		op(1, "release", `{"type":"release","resource":"r1","lease_id":"D"}`, TypeInfo, 12, 15, "", nil),
		op(2, "acquire", acqR1, TypeOK, 20, 30, grant("Y", 3, 25), nil))
	if boundary.Result != Valid {
		t.Errorf("holders on two resources, one release in doubt: %s, want valid (%v)", boundary.Result, boundary.Violations)
	}
	handoff := checkOps(t, WorkloadLock,
		op(0, "acquire", acq, TypeOK, 0, 10, grant("A", 1, 5), nil),
		op(0, "release", release, TypeOK, 15, 18, `{"type":"release_ok","log_time_ns":16000000}`, nil),
		op(1, "acquire", acq, TypeOK, 20, 30, grant("B", 2, 25), nil))
	if handoff.Result != Valid {
		t.Errorf("grant after release: %s, want valid (%v)", handoff.Result, handoff.Violations)
	}
}

// TestReplyTrace checks the trace rebuilt from replies, on its own (the
// lock model would flag these histories first and skip the invariants).
// Goal: overlapping exclusive holders and a token that goes down with log
// time are fencing violations; a lease whose release outcome is unknown
// has no span, so it cannot cause a false overlap. Method: checker.Check
// on a history holding only the rebuilt trace.
func TestReplyTrace(t *testing.T) {
	ms := int64(time.Millisecond)
	grant := func(id string, token uint64, atMs int64) checker.Op {
		return checker.Op{Input: models.LockInput{Op: models.Acquire, Resource: "r", TTLNs: 1000 * ms},
			Output: models.LockOutput{Granted: true, LeaseID: id, Token: token, LogTimeNs: atMs * ms, ExpiresAtNs: (atMs + 1000) * ms}}
	}
	unknownRelease := checker.Op{Input: models.LockInput{Op: models.Release, Resource: "r", LeaseID: "A"}, Output: models.LockOutput{Unknown: true}}
	cases := []struct {
		name string
		ops  []checker.Op
		want string // substring of a violation, "" for none
	}{
		{"overlap", []checker.Op{grant("A", 1, 0), grant("B", 2, 500)}, "overlapping exclusive holders"},
		{"token down", []checker.Op{grant("A", 2, 0), grant("B", 1, 2000)}, "token decreased"},
		{"release in doubt", []checker.Op{grant("A", 1, 0), unknownRelease, grant("B", 2, 500)}, ""},
		{"sequential", []checker.Op{grant("A", 1, 0), grant("B", 2, 1000)}, ""},
	}
	for _, c := range cases {
		res := checker.Check(context.Background(), &checker.History{Trace: replyTrace(c.ops)}, checker.Options{})
		var msgs []string
		for _, v := range res.Violations {
			if v.Check == checker.CheckFencing { // the trace alone: other checks need the ops
				msgs = append(msgs, v.Message)
			}
		}
		got := strings.Join(msgs, "; ")
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: violations %q, want %q", c.name, got, c.want)
		}
	}
}
