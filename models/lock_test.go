package models

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

const (
	ms  = int64(time.Millisecond)
	sec = int64(time.Second)
)

// exact judges times with no slack; slack2 with the HTTP API's 2ms.
var (
	exact  = lockSpec{}
	slack2 = lockSpec{slack: 2 * ms}
)

func acq(client, mode string, ttl int64) LockInput {
	return LockInput{Op: Acquire, Resource: "r", ClientID: client, Mode: mode, TTLNs: ttl}
}

func withReq(in LockInput, request string) LockInput {
	in.RequestID = request
	return in
}

func rel(id string) LockInput { return LockInput{Op: Release, Resource: "r", LeaseID: id} }

func renew(id string, ttl int64) LockInput {
	return LockInput{Op: Renew, Resource: "r", LeaseID: id, TTLNs: ttl}
}

func status() LockInput { return LockInput{Op: Status, Resource: "r"} }

func validate(token uint64) LockInput { return LockInput{Op: Validate, Resource: "r", Token: token} }

func validAt(at int64, valid bool) LockOutput { return LockOutput{LogTimeNs: at, Valid: valid} }

func grant(id string, token uint64, at, expires int64) LockOutput {
	return LockOutput{Granted: true, LeaseID: id, Token: token, LogTimeNs: at, ExpiresAtNs: expires}
}

func ok(at int64) LockOutput { return LockOutput{LogTimeNs: at} }

func renewed(at, expires int64) LockOutput { return LockOutput{LogTimeNs: at, ExpiresAtNs: expires} }

func notHolderAt(at int64) LockOutput { return LockOutput{Code: CodeNotHolder, LogTimeNs: at} }

func unknown() LockOutput { return LockOutput{Unknown: true} }

func holders(at int64, hs ...HolderView) LockOutput { return LockOutput{LogTimeNs: at, Holders: hs} }

func hv(id, mode string, token uint64, expires int64) HolderView {
	return HolderView{Fingerprint: leaseKey(id), Mode: mode, Token: token, ExpiresAtNs: expires}
}

// state builds a model state at log time now holding the given leases.
func state(now int64, floor uint64, ls ...lease) lockState {
	return lockState{logTime: now, tokenFloor: floor, leases: ls}
}

func xLease(id string, token uint64, expires int64) lease {
	return lease{ID: leaseKey(id), Mode: Exclusive, Token: token, ExpiresAt: expires, TTL: 10 * sec}
}

// TestStepLock table-drives single steps: legal ones yield the expected number of states, illegal ones fail for their own reason.
func TestStepLock(t *testing.T) {
	l1 := xLease("L1", 1, 10*sec)
	s1 := state(sec, 2, l1)
	cases := []struct {
		name    string
		from    lockState
		in      LockInput
		out     LockOutput
		wantErr error
		states  int
	}{
		{"first grant", lockState{}, acq("a", Exclusive, 10*sec), grant("L1", 1, sec, 11*sec), nil, 1},
		{"grant after expiry", s1, acq("b", Exclusive, sec), grant("L2", 2, 10*sec, 11*sec), nil, 1},
		{"grant while live X", s1, acq("b", Exclusive, sec), grant("L2", 2, 5*sec, 6*sec), errConflict, 0},
		{"shared while live X", s1, acq("b", Shared, sec), grant("L2", 2, 5*sec, 6*sec), errConflict, 0},
		{"shared with shared", state(sec, 2, lease{ID: leaseKey("L1"), Mode: Shared, Token: 1, ExpiresAt: 10 * sec}), acq("b", Shared, sec), grant("L2", 2, 5*sec, 6*sec), nil, 1},
		{"token equal", s1, acq("b", Exclusive, sec), grant("L2", 1, 10*sec, 11*sec), errTokenOrder, 0},
		{"token lower", s1, acq("b", Exclusive, sec), grant("L2", 0, 10*sec, 11*sec), errTokenOrder, 0},
		{"grant log time backwards", s1, acq("b", Exclusive, sec), grant("L2", 2, 0, sec), errLogTimeBackwards, 0},
		{"not granted always legal", s1, acq("b", Exclusive, sec), LockOutput{LogTimeNs: 0}, nil, 1},
		{"unknown acquire adds phantom", s1, acq("b", Exclusive, sec), unknown(), nil, 1},
		{"release live", s1, rel("L1"), ok(2 * sec), nil, 1},
		{"release expired", s1, rel("L1"), ok(10 * sec), errNotLive, 0},
		{"release unknown lease", s1, rel("L9"), ok(2 * sec), errNotLive, 0},
		{"release unknown outcome branches", s1, rel("L1"), unknown(), nil, 2},
		{"renew live", s1, renew("L1", 0), renewed(2*sec, 12*sec), nil, 1},
		{"renew wrong token", s1, renew("L1", 0), LockOutput{LogTimeNs: 2 * sec, ExpiresAtNs: 12 * sec, Token: 7}, errTokenMismatch, 0},
		{"renew expired", s1, renew("L1", 0), renewed(11*sec, 21*sec), errNotLive, 0},
		{"renew unknown outcome branches", s1, renew("L1", 0), unknown(), nil, 2},
		{"not_holder after expiry", s1, rel("L1"), notHolderAt(10 * sec), nil, 1},
		{"not_holder while live", s1, rel("L1"), notHolderAt(5 * sec), errFalseNotHolder, 0},
		{"not_holder without log time", s1, renew("L1", 0), notHolderAt(0), nil, 1},
		{"other error has no effect", s1, rel("L1"), LockOutput{Code: "unavailable"}, nil, 1},
		{"status exact", s1, status(), holders(2*sec, hv("L1", Exclusive, 1, 10*sec)), nil, 1},
		{"status missing holder", s1, status(), holders(2 * sec), errStatusMismatch, 0},
		{"status extra holder", s1, status(), holders(2*sec, hv("L1", Exclusive, 1, 10*sec), hv("Z", Shared, 9, 10*sec)), errStatusMismatch, 0},
		{"status two exclusive", lockState{phantoms: 2}, status(), holders(2*sec, hv("A", Exclusive, 1, 10*sec), hv("B", Exclusive, 2, 10*sec)), errStatusMismatch, 0},
		{"status wrong expiry", s1, status(), holders(2*sec, hv("L1", Exclusive, 1, 9*sec)), errStatusMismatch, 0},
		{"status reveals phantom", lockState{phantoms: 1}, status(), holders(2*sec, hv("P", Exclusive, 4, 10*sec)), nil, 1},
		{"status log time backwards", s1, status(), holders(0), errLogTimeBackwards, 0},
		{"validate holder's token", s1, validate(1), validAt(2*sec, true), nil, 1},
		{"validate holder's token not valid", s1, validate(1), validAt(2*sec, false), errFalseInvalid, 0},
		{"validate another token", s1, validate(7), validAt(2*sec, false), nil, 1},
		{"validate a token nobody holds valid", s1, validate(7), validAt(2*sec, true), errValidNotHolder, 0},
		{"validate an expired holder's token valid", s1, validate(1), validAt(11*sec, true), errValidNotHolder, 0},
		{"validate an expired holder's token", s1, validate(1), validAt(11*sec, false), nil, 1},
		{"validate may be a phantom's token", lockState{phantoms: 1}, validate(7), validAt(2*sec, true), nil, 1},
		{"validate log time backwards", s1, validate(1), validAt(0, true), errLogTimeBackwards, 0},
		{"validate unknown", s1, validate(1), unknown(), nil, 1},
		{"unknown op", s1, LockInput{Op: "frob"}, ok(2 * sec), errUnknownOp, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, err := exact.step(tc.from, tc.in, tc.out)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if len(next) != tc.states {
				t.Fatalf("got %d states %v, want %d", len(next), next, tc.states)
			}
		})
	}
}

// TestStepLockSlackAndLateGrants table-drives steps with times inside/outside the slack and grants reported late, checking each is judged as a correct server allows.
func TestStepLockSlackAndLateGrants(t *testing.T) {
	s1 := state(sec, 2, xLease("L1", 1, 10*sec))
	floor9 := state(sec, 10, xLease("L1", 1, 10*sec))
	cases := []struct {
		name    string
		spec    lockSpec
		from    lockState
		in      LockInput
		out     LockOutput
		wantErr error
	}{
		{"grant 1ms before expiry, exact", exact, s1, acq("b", Exclusive, sec), grant("L2", 2, 10*sec-ms, 11*sec-ms), errConflict},
		{"grant 1ms before expiry, slack", slack2, s1, acq("b", Exclusive, sec), grant("L2", 2, 10*sec-ms, 11*sec-ms), nil},
		{"grant 3ms before expiry, slack", slack2, s1, acq("b", Exclusive, sec), grant("L2", 2, 10*sec-3*ms, 11*sec-3*ms), errConflict},
		{"status expiry 1ms off, slack", slack2, s1, status(), holders(2*sec, hv("L1", Exclusive, 1, 10*sec-ms)), nil},
		{"status expiry 3ms off, slack", slack2, s1, status(), holders(2*sec, hv("L1", Exclusive, 1, 10*sec-3*ms)), errStatusMismatch},
		{"release 1ms after expiry, slack", slack2, s1, rel("L1"), ok(10*sec + ms), nil},
		{"release 1ms after expiry, exact", exact, s1, rel("L1"), ok(10*sec + ms), errNotLive},
		{"not_holder 1ms before expiry, slack", slack2, s1, rel("L1"), notHolderAt(10*sec - ms), nil},
		{"late grant below token floor", exact, floor9, acq("b", Shared, 10*sec), grant("L5", 5, 12*sec, 20*sec), nil},
		{"ended grant replayed while X held", exact, state(5*sec, 2, xLease("L1", 1, 10*sec)), acq("b", Exclusive, 5*sec), grant("L0", 0, 6*sec, 2*sec), nil},
		{"late grant while X held", exact, s1, acq("b", Exclusive, 10*sec), grant("L2", 2, 5*sec, 12*sec), errConflict},
		{"late grant reusing a live token", exact, s1, acq("b", Shared, 10*sec), grant("L2", 1, 8*sec, 15*sec), errTokenOrder},
		{"late grant answered in the past", exact, state(5*sec, 2), acq("b", Exclusive, 10*sec), grant("L2", 2, 4*sec, 13*sec), errLogTimeBackwards},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, err := tc.spec.step(tc.from, tc.in, tc.out)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if (err == nil) != (len(next) > 0) {
				t.Fatalf("err %v with %d states", err, len(next))
			}
		})
	}
}

// TestStepLockEffects checks what legal steps leave in the state, since a forgotten holder would silently weaken later checks.
func TestStepLockEffects(t *testing.T) {
	s1 := state(sec, 2, xLease("L1", 1, 10*sec))

	next, _ := exact.step(s1, renew("L1", 0), unknown())
	if !next[0].equal(s1) || !next[1].leases[0].Open || next[1].leases[0].ExpiresAt != 11*sec {
		t.Fatalf("unknown renew: got %v", next)
	}
	next, _ = exact.step(s1, renew("L1", 0), notHolderAt(0))
	if len(next[0].leases) != 0 || next[0].logTime != 10*sec {
		t.Fatalf("not_holder without log time must free the lease and reach its expiry: %v", next[0])
	}
	next, _ = exact.step(lockState{phantoms: 1}, status(), holders(2*sec, hv("P", Exclusive, 4, 10*sec)))
	if next[0].phantoms != 0 || next[0].tokenFloor != 5 || next[0].find(leaseKey("P")) < 0 {
		t.Fatalf("revealed phantom must become a known holder: %v", next[0])
	}
	next, _ = exact.step(s1, acq("b", Exclusive, sec), unknown())
	if next[0].phantoms != 1 || len(next[0].leases) != 1 {
		t.Fatalf("unknown acquire: %v", next[0])
	}
}

// op builds one porcupine operation; ret < 0 means the outcome is unknown.
func op(client int, call, ret int64, in LockInput, out LockOutput) porcupine.Operation {
	if out.Unknown {
		ret = math.MaxInt64
	}
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

// TestLockHistories runs Porcupine on small histories: legal ones (every indefinite outcome) pass, each bug class the model promises to catch fails.
func TestLockHistories(t *testing.T) {
	cases := []struct {
		name  string
		legal bool
		ops   []porcupine.Operation
	}{
		{"sequential handoff", true, []porcupine.Operation{
			op(0, 0, 2*sec, acq("a", Exclusive, 10*sec), grant("L1", 1, sec, 11*sec)),
			op(0, 2*sec, 4*sec, rel("L1"), ok(3*sec)),
			op(1, 4*sec, 6*sec, acq("b", Exclusive, 10*sec), grant("L2", 2, 5*sec, 15*sec)),
		}},
		{"shared holders coexist", true, []porcupine.Operation{
			op(0, 0, 2*sec, acq("a", Shared, 10*sec), grant("L1", 1, sec, 11*sec)),
			op(1, 0, 3*sec, acq("b", Shared, 10*sec), grant("L2", 2, 2*sec, 12*sec)),
			op(2, 4*sec, 5*sec, status(), holders(4*sec, hv("L1", Shared, 1, 11*sec), hv("L2", Shared, 2, 12*sec))),
			op(0, 6*sec, 7*sec, rel("L1"), ok(6*sec)),
			op(1, 6*sec, 7*sec, rel("L2"), ok(7*sec)),
			op(2, 8*sec, 9*sec, acq("c", Exclusive, 10*sec), grant("L3", 3, 8*sec, 18*sec)),
		}},
		{"expiry frees the lock", true, []porcupine.Operation{
			op(0, 0, 2*sec, acq("a", Exclusive, 4*sec), grant("L1", 1, sec, 5*sec)),
			op(1, 5*sec, 7*sec, acq("b", Exclusive, 4*sec), grant("L2", 2, 6*sec, 10*sec)),
			op(0, 8*sec, 9*sec, rel("L1"), notHolderAt(8*sec)),
		}},
		{"concurrent status linearized before grant", true, []porcupine.Operation{
			op(0, 0, 10*sec, acq("a", Exclusive, 20*sec), grant("L1", 1, 5*sec, 25*sec)),
			op(1, sec, 3*sec, status(), holders(2*sec)),
		}},
		{"queued grant reports its grant log time", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 4*sec), grant("L1", 1, 0, 4*sec)),
			op(1, sec, 9*sec, LockInput{Op: Acquire, Resource: "r", Mode: Exclusive, TTLNs: 4 * sec, Wait: true}, grant("L2", 2, 4*sec, 8*sec)),
		}},
		{"a wait refused as deadlock takes nothing", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, sec, 11*sec)),
			op(1, 2*sec, 3*sec, LockInput{Op: Acquire, Resource: "r", ClientID: "b", Mode: Exclusive, TTLNs: 4 * sec, Wait: true},
				LockOutput{Code: CodeDeadlock, Cycle: []string{"b", "a"}}),
			op(2, 4*sec, 5*sec, status(), holders(4*sec, hv("L1", Exclusive, 1, 11*sec))),
		}},
		{"validate before and after a release", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, sec, 11*sec)),
			op(1, 2*sec, 3*sec, validate(1), validAt(2*sec, true)),
			op(0, 4*sec, 5*sec, rel("L1"), ok(4*sec)),
			op(1, 6*sec, 7*sec, validate(1), validAt(6*sec, false)),
		}},
		{"validate concurrent with its release may say valid", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, sec, 11*sec)),
			op(0, 2*sec, 5*sec, rel("L1"), ok(4*sec)),
			op(1, 3*sec, 6*sec, validate(1), validAt(3*sec, true)),
		}},
		{"validate says valid after the release", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, sec, 11*sec)),
			op(0, 2*sec, 3*sec, rel("L1"), ok(2*sec)),
			op(1, 4*sec, 5*sec, validate(1), validAt(4*sec, true)),
		}},
		{"validate says not valid while held", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, sec, 11*sec)),
			op(1, 2*sec, 3*sec, validate(1), validAt(2*sec, false)),
		}},
		{"unknown acquire revealed by status", true, []porcupine.Operation{
			op(0, 0, 0, acq("a", Exclusive, 20*sec), unknown()),
			op(1, 5*sec, 6*sec, status(), holders(5*sec, hv("P", Exclusive, 7, 20*sec))),
			op(2, 7*sec, 8*sec, acq("c", Exclusive, sec), LockOutput{LogTimeNs: 7 * sec}),
			op(2, 21*sec, 22*sec, acq("c", Exclusive, sec), grant("L2", 8, 21*sec, 22*sec)),
		}},
		{"a revealed phantom may be released as an orphan", true, []porcupine.Operation{
			op(0, 0, 0, acq("a", Exclusive, 20*sec), unknown()),
			op(1, 5*sec, 6*sec, status(), holders(5*sec, hv("P", Exclusive, 7, 20*sec))),
			op(2, 7*sec, 8*sec, acq("c", Exclusive, sec), grant("L2", 8, 7*sec, 8*sec)),
		}},
		{"a delivered grant listed by status is never released unseen", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 20*sec), grant("L1", 7, 0, 20*sec)),
			op(1, 5*sec, 6*sec, status(), holders(5*sec, hv("L1", Exclusive, 7, 20*sec))),
			op(2, 7*sec, 8*sec, acq("c", Exclusive, sec), grant("L2", 8, 7*sec, 8*sec)),
		}},
		{"a retry answers the request's grant", true, []porcupine.Operation{
			op(0, 0, 0, withReq(acq("a", Exclusive, 10*sec), "q"), unknown()),
			op(1, 2*sec, 3*sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 2*sec, 11*sec)),
		}},
		{"one request id granted two leases", false, []porcupine.Operation{
			op(0, 0, sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 0, 10*sec)),
			op(0, sec, 2*sec, rel("L1"), ok(sec)),
			op(0, 3*sec, 4*sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L2", 2, 3*sec, 13*sec)),
		}},
		{"a released lease reported live to a retry", false, []porcupine.Operation{
			op(0, 0, sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 0, 10*sec)),
			op(0, sec, 2*sec, rel("L1"), ok(sec)),
			op(0, 3*sec, 4*sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 3*sec, 10*sec)),
		}},
		{"a retry after the release says the lease ended", true, []porcupine.Operation{
			op(0, 0, sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 0, 10*sec)),
			op(0, sec, 2*sec, rel("L1"), ok(sec)),
			op(0, 3*sec, 4*sec, withReq(acq("a", Exclusive, 10*sec), "q"), LockOutput{Code: CodeLeaseEnded, LeaseID: "L1", Token: 1}),
			op(1, 5*sec, 6*sec, acq("b", Exclusive, 10*sec), grant("L2", 2, 5*sec, 15*sec)),
		}},
		{"a status lists a queued grant its waiter later learns ended", true, []porcupine.Operation{
			op(0, 0, 10*sec, acq("a", Exclusive, 2*sec), LockOutput{Code: CodeLeaseEnded, LeaseID: "L1", Token: 1}),
			op(1, 2*sec, 3*sec, status(), holders(2*sec, hv("L1", Exclusive, 1, 3*sec))),
			op(1, 4*sec, 5*sec, acq("b", Exclusive, 2*sec), grant("L2", 2, 4*sec, 6*sec)),
		}},
		{"a phantom revealed after a lease_ended answer", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, sec), LockOutput{Code: CodeLeaseEnded, LeaseID: "L1", Token: 1}),
			op(1, 0, 0, acq("b", Exclusive, 20*sec), unknown()),
			op(2, 5*sec, 6*sec, status(), holders(5*sec, hv("P", Exclusive, 7, 20*sec))),
		}},
		{"lease_ended names another lease than the request's grant", false, []porcupine.Operation{
			op(0, 0, sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 0, 10*sec)),
			op(0, sec, 2*sec, rel("L1"), ok(sec)),
			op(0, 3*sec, 4*sec, withReq(acq("a", Exclusive, 10*sec), "q"), LockOutput{Code: CodeLeaseEnded, LeaseID: "L9", Token: 9}),
		}},
		{"phantom never blocks a grant", true, []porcupine.Operation{
			op(0, 0, 0, acq("a", Exclusive, 20*sec), unknown()),
			op(1, 5*sec, 6*sec, acq("b", Exclusive, 20*sec), grant("L2", 2, 5*sec, 25*sec)),
		}},
		{"unknown release then grant", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 100*sec), grant("L1", 1, sec, 101*sec)),
			op(0, 2*sec, 0, rel("L1"), unknown()),
			op(1, 3*sec, 4*sec, acq("b", Exclusive, 10*sec), grant("L2", 2, 3*sec, 13*sec)),
		}},
		{"not_holder explained by unknown release", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 100*sec), grant("L1", 1, sec, 101*sec)),
			op(0, 2*sec, 0, rel("L1"), unknown()),
			op(1, 3*sec, 4*sec, renew("L1", 0), notHolderAt(3*sec)),
		}},
		{"unknown renew, grant after old expiry", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, 0, 10*sec)),
			op(0, 2*sec, 0, renew("L1", 10*sec), unknown()),
			op(1, 12*sec, 13*sec, acq("b", Exclusive, 10*sec), grant("L2", 2, 12*sec, 22*sec)),
			op(1, 14*sec, 15*sec, status(), holders(14*sec, hv("L2", Exclusive, 2, 22*sec))),
		}},
		{"unknown renew kept the lease alive", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, 0, 10*sec)),
			op(0, 2*sec, 0, renew("L1", 20*sec), unknown()),
			op(1, 15*sec, 16*sec, status(), holders(15*sec, hv("L1", Exclusive, 1, 25*sec))),
		}},
		{"not_holder without log time", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, sec, 11*sec)),
			op(0, 2*sec, 3*sec, renew("L1", 0), notHolderAt(0)),
			op(1, 13*sec, 14*sec, acq("b", Exclusive, 10*sec), grant("L2", 2, 12*sec, 22*sec)),
		}},
		{"renew answers another expiry than log time plus ttl", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, 0, 10*sec)),
			op(0, 5*sec, 6*sec, renew("L1", 0), renewed(5*sec, 10*sec)),
		}},
		{"renew extends the lease", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, 0, 10*sec)),
			op(0, 5*sec, 6*sec, renew("L1", 10*sec), renewed(5*sec, 15*sec)),
			op(1, 12*sec, 13*sec, status(), holders(12*sec, hv("L1", Exclusive, 1, 15*sec))),
		}},
		{"resources are independent", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, 0, 10*sec)),
			op(1, 0, sec, LockInput{Op: Acquire, Resource: "other", Mode: Exclusive, TTLNs: 10 * sec}, grant("L2", 1, 0, 10*sec)),
		}},

		{"queued grant found late, seen by a status meanwhile", true, []porcupine.Operation{
			op(0, 0, 10*sec, LockInput{Op: Acquire, Resource: "r", Mode: Exclusive, TTLNs: 10 * sec, Wait: true}, grant("L1", 1, 5*sec, 12*sec)),
			op(1, 3*sec, 4*sec, status(), holders(3*sec, hv("L1", Exclusive, 1, 12*sec))),
		}},
		{"retry answered from the dedupe table", true, []porcupine.Operation{
			op(0, 0, 0, acq("a", Exclusive, 10*sec), unknown()),
			op(2, 2*sec, 3*sec, status(), holders(2*sec, hv("L1", Exclusive, 1, 11*sec))),
			op(1, 5*sec, 6*sec, acq("a", Exclusive, 10*sec), grant("L1", 1, 5*sec, 11*sec)),
		}},
		{"a retry answered at its grant's own log time", true, []porcupine.Operation{
			op(0, 0, sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 5*sec, 15*sec)),
			op(0, sec, 2*sec, renew("L1", 0), renewed(5*sec, 15*sec)),
			op(0, 2*sec, 3*sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 5*sec, 15*sec)),
		}},
		{"a retry at the log time a status revealed its grant", true, []porcupine.Operation{
			op(0, 0, 0, withReq(acq("a", Exclusive, 10*sec), "q"), unknown()),
			op(2, 2*sec, 3*sec, status(), holders(5*sec, hv("L1", Exclusive, 1, 15*sec))),
			op(1, 4*sec, 5*sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 5*sec, 15*sec)),
		}},
		{"a retry after a renew with a longer ttl", true, []porcupine.Operation{
			op(0, 0, sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 0, 10*sec)),
			op(0, sec, 2*sec, renew("L1", 20*sec), renewed(2*sec, 22*sec)),
			op(0, 2*sec, 3*sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 3*sec, 22*sec)),
			op(1, 4*sec, 5*sec, status(), holders(4*sec, hv("L1", Exclusive, 1, 22*sec))),
		}},
		{"a retry reports its lease with another token", false, []porcupine.Operation{
			op(0, 0, sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 5*sec, 15*sec)),
			op(0, 2*sec, 3*sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 2, 5*sec, 15*sec)),
		}},
		{"another request answered a known lease at its log time", false, []porcupine.Operation{
			op(0, 0, sec, withReq(acq("a", Exclusive, 10*sec), "q"), grant("L1", 1, 5*sec, 15*sec)),
			op(1, 2*sec, 3*sec, withReq(acq("b", Exclusive, 10*sec), "p"), grant("L1", 1, 5*sec, 15*sec)),
		}},
		{"retry replays an ended grant", true, []porcupine.Operation{
			op(0, 0, 0, acq("a", Exclusive, 10*sec), unknown()),
			op(2, 20*sec, 21*sec, acq("b", Exclusive, 10*sec), grant("L2", 2, 20*sec, 30*sec)),
			op(1, 22*sec, 23*sec, acq("a", Exclusive, 10*sec), grant("L1", 1, 22*sec, 11*sec)),
		}},
		{"two exclusive holders", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, 0, 10*sec)),
			op(1, 4*sec, 6*sec, acq("b", Exclusive, 10*sec), grant("L2", 2, 5*sec, 15*sec)),
		}},
		{"exclusive over shared", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Shared, 10*sec), grant("L1", 1, 0, 10*sec)),
			op(1, 4*sec, 6*sec, acq("b", Exclusive, 10*sec), grant("L2", 2, 5*sec, 15*sec)),
		}},
		{"token not increasing", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 5, 0, 10*sec)),
			op(0, 2*sec, 3*sec, rel("L1"), ok(2*sec)),
			op(1, 4*sec, 5*sec, acq("b", Exclusive, 10*sec), grant("L2", 4, 4*sec, 14*sec)),
		}},
		{"token reused", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Shared, 10*sec), grant("L1", 5, 0, 10*sec)),
			op(1, 2*sec, 3*sec, acq("b", Shared, 10*sec), grant("L2", 5, 2*sec, 12*sec)),
		}},
		{"release of expired lease succeeds", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, 0, 10*sec)),
			op(0, 11*sec, 12*sec, rel("L1"), ok(11*sec)),
		}},
		{"renew after release succeeds", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, 0, 10*sec)),
			op(0, 2*sec, 3*sec, rel("L1"), ok(2*sec)),
			op(0, 4*sec, 5*sec, renew("L1", 0), renewed(4*sec, 14*sec)),
		}},
		{"not_holder for live lease", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 100*sec), grant("L1", 1, 0, 100*sec)),
			op(0, 4*sec, 5*sec, rel("L1"), notHolderAt(4*sec)),
		}},
		{"not_holder without log time for live lease", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 100*sec), grant("L1", 1, 0, 100*sec)),
			op(0, 2*sec, 3*sec, renew("L1", 0), notHolderAt(0)),
			op(1, 4*sec, 5*sec, status(), holders(4*sec)),
		}},
		{"status misses a live holder", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 100*sec), grant("L1", 1, 0, 100*sec)),
			op(1, 4*sec, 5*sec, status(), holders(4*sec)),
		}},
		{"status shows a stranger", false, []porcupine.Operation{
			op(1, 4*sec, 5*sec, status(), holders(4*sec, hv("Z", Exclusive, 3, 100*sec))),
		}},
		{"one unknown acquire cannot explain two holders", false, []porcupine.Operation{
			op(0, 0, 0, acq("a", Shared, 20*sec), unknown()),
			op(1, 5*sec, 6*sec, status(), holders(5*sec, hv("P", Shared, 7, 20*sec), hv("Q", Shared, 8, 20*sec))),
		}},
		{"late grant overlapping a live holder", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 100*sec), grant("L1", 1, 0, 100*sec)),
			op(1, 0, 10*sec, LockInput{Op: Acquire, Resource: "r", Mode: Exclusive, TTLNs: 10 * sec, Wait: true}, grant("L2", 2, 5*sec, 12*sec)),
		}},
		{"log time goes backwards", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 100*sec), grant("L1", 1, 10*sec, 110*sec)),
			op(0, 2*sec, 3*sec, rel("L1"), ok(5*sec)),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := porcupine.CheckOperationsTimeout(Lock, tc.ops, 5*time.Second)
			want := porcupine.Illegal
			if tc.legal {
				want = porcupine.Ok
			}
			if got != want {
				t.Fatalf("check = %v, want %v", got, want)
			}
		})
	}
}

// TestLockPartitions checks that each resource becomes its own partition (one visualization lane group per lock).
func TestLockPartitions(t *testing.T) {
	ops := []porcupine.Operation{
		op(0, 0, 1, LockInput{Op: Status, Resource: "a"}, holders(0)),
		op(1, 0, 1, LockInput{Op: Status, Resource: "b"}, holders(0)),
		op(2, 2, 3, LockInput{Op: Status, Resource: "a"}, holders(0)),
	}
	parts := Lock.Partition(ops)
	if len(parts) != 2 || len(parts[0]) != 2 || len(parts[1]) != 1 {
		t.Fatalf("partitions = %v", parts)
	}
}

// TestDescribeLock checks the visualization text names lease, mode, token, outcome and open expiries.
func TestDescribeLock(t *testing.T) {
	got := DescribeLockOperation(acq("a", Shared, 10*sec), grant("L1", 3, sec, 11*sec))
	for _, want := range []string{"acquire(a S", "L1", "#3", "@1s"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	s := state(sec, 2, lease{ID: leaseKey("L1"), Mode: Shared, Token: 1, ExpiresAt: 5 * sec, Open: true})
	if got := s.String(); !strings.Contains(got, leaseKey("L1")+":S#1≥5s") {
		t.Errorf("state = %q", got)
	}
}
