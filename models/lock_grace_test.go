package models

import (
	"errors"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// graced gives an acquire a grace window.
func graced(in LockInput, grace int64) LockInput {
	in.GraceNs = grace
	return in
}

// hvGrace is a status holder in its grace window until until.
func hvGrace(id string, token uint64, at, until int64) HolderView {
	return HolderView{Fingerprint: leaseKey(id), Mode: Exclusive, Token: token, ExpiresAtNs: at, GraceUntilNs: until}
}

// TestStepLockGrace: goal — the model knows a grace window: a lease past
// its expiry keeps the resource from others until expiry+grace, may be
// renewed (revived) or released then, is listed by status as in grace,
// and is not valid; once the window is over it is gone. Each illegal step
// fails for its own reason. Method: single steps from a state holding L1
// (expiry 10s, grace 5s).
func TestStepLockGrace(t *testing.T) {
	l1 := xLease("L1", 1, 10*sec)
	l1.Grace = 5 * sec
	s1 := state(sec, 2, l1)
	cases := []struct {
		name    string
		in      LockInput
		out     LockOutput
		wantErr error
	}{
		{"grant in the window", acq("b", Exclusive, sec), grant("L2", 2, 12*sec, 13*sec), errConflict},
		{"shared grant in the window", acq("b", Shared, sec), grant("L2", 2, 12*sec, 13*sec), errConflict},
		{"grant after the window", acq("b", Exclusive, sec), grant("L2", 2, 15*sec, 16*sec), nil},
		{"renew in the window revives", renew("L1", 0), renewed(12*sec, 22*sec), nil},
		{"renew after the window", renew("L1", 0), renewed(15*sec, 25*sec), errNotLive},
		{"release in the window", rel("L1"), ok(12 * sec), nil},
		{"not_holder in the window", renew("L1", 0), notHolderAt(12 * sec), errFalseNotHolder},
		{"not_holder after the window", renew("L1", 0), notHolderAt(15 * sec), nil},
		{"status in the window", status(), holders(12*sec, hvGrace("L1", 1, 12*sec, 15*sec)), nil},
		{"status misses it in the window", status(), holders(12 * sec), errStatusMismatch},
		{"status with another window", status(), holders(12*sec, hvGrace("L1", 1, 12*sec, 17*sec)), errStatusMismatch},
		{"status in grace before expiry", status(), holders(8*sec, hvGrace("L1", 1, 8*sec, 13*sec)), errStatusMismatch},
		{"validate in the window valid", validate(1), validAt(12*sec, true), errValidInGrace},
		{"validate in the window not valid", validate(1), validAt(12*sec, false), nil},
		{"validate held valid", validate(1), validAt(9*sec, true), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, err := exact.step(s1, tc.in, tc.out)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if (err == nil) != (len(next) > 0) {
				t.Fatalf("err %v with %d states", err, len(next))
			}
		})
	}
}

// TestLockHistoriesGrace: goal — Porcupine with the model passes a correct
// grace history (expiry, refused try-lock, revive with the same token,
// expiry again, the waiter granted after the window) and fails the
// grace-revive-regranted bug (a renew answered after the window, once the
// waiter holds the lock). Method: small histories through Lock.
func TestLockHistoriesGrace(t *testing.T) {
	correct := []porcupine.Operation{
		op(0, 0, sec, graced(acq("a", Exclusive, 4*sec), 2*sec), grant("L1", 1, sec, 5*sec)),
		op(1, 5*sec, 6*sec, acq("b", Exclusive, 4*sec), LockOutput{LogTimeNs: 6 * sec}),
		op(0, 6*sec, 7*sec, renew("L1", 0), renewed(6*sec, 10*sec)),
		op(1, 7*sec, 13*sec, LockInput{Op: Acquire, Resource: "r", ClientID: "b", Mode: Exclusive, TTLNs: 4 * sec, Wait: true},
			grant("L2", 2, 12*sec, 16*sec)),
	}
	bug := append(append([]porcupine.Operation{}, correct...),
		op(0, 13*sec, 14*sec, renew("L1", 0), renewed(13*sec, 17*sec)))
	for _, tc := range []struct {
		name  string
		legal bool
		ops   []porcupine.Operation
	}{
		{"revive in the window, waiter after it", true, correct},
		{"renew revives after the window ended and the lock was re-granted", false, bug},
		{"waiter granted in the window", false, []porcupine.Operation{
			op(0, 0, sec, graced(acq("a", Exclusive, 4*sec), 2*sec), grant("L1", 1, sec, 5*sec)),
			op(1, 5*sec, 7*sec, LockInput{Op: Acquire, Resource: "r", ClientID: "b", Mode: Exclusive, TTLNs: 4 * sec, Wait: true},
				grant("L2", 2, 6*sec, 10*sec)),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := porcupine.CheckOperationsTimeout(Lock, tc.ops, 5*time.Second)
			if want := map[bool]porcupine.CheckResult{true: porcupine.Ok, false: porcupine.Illegal}[tc.legal]; got != want {
				t.Fatalf("check = %v, want %v", got, want)
			}
		})
	}
}
