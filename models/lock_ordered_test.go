package models

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestMayTakeEffect checks the merged outcome of indefinite releases and renews: each only weakens the lease, and applying it again changes nothing.
func TestMayTakeEffect(t *testing.T) {
	s1 := state(sec, 2, xLease("L1", 1, 10*sec))
	cases := []struct {
		name string
		in   LockInput
		want lease
	}{
		{"release makes it maybe gone", rel("L1"), lease{ID: leaseKey("L1"), Mode: Exclusive, Token: 1, ExpiresAt: 10 * sec, TTL: 10 * sec, MaybeGone: true}},
		{"longer renew opens it at the old expiry", renew("L1", 20*sec), lease{ID: leaseKey("L1"), Mode: Exclusive, Token: 1, ExpiresAt: 10 * sec, TTL: 10 * sec, Open: true}},
		{"shorter renew opens it at now+ttl", renew("L1", 2*sec), lease{ID: leaseKey("L1"), Mode: Exclusive, Token: 1, ExpiresAt: 3 * sec, TTL: 2 * sec, Open: true}},
		{"renew with ttl 0 reuses the lease's", renew("L1", 0), lease{ID: leaseKey("L1"), Mode: Exclusive, Token: 1, ExpiresAt: 10 * sec, TTL: 10 * sec, Open: true}},
		{"other lease untouched", rel("L9"), xLease("L1", 1, 10*sec)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			once := exact.mayTakeEffect(s1, tc.in)
			if len(once.leases) != 1 || once.leases[0] != tc.want {
				t.Fatalf("got %v, want %+v", once, tc.want)
			}
			later := once
			later.logTime = 5 * sec
			if twice := exact.mayTakeEffect(later, tc.in); !twice.equal(later) {
				t.Fatalf("not idempotent: %v then %v", later, twice)
			}
			if s1.leases[0] != xLease("L1", 1, 10*sec) {
				t.Fatalf("input state mutated: %v", s1)
			}
		})
	}
}

// TestStepMaybeGone table-drives steps on a lease an indefinite release may have ended: nothing may rely on it being live, but a status listing it must still list it right.
func TestStepMaybeGone(t *testing.T) {
	gone := lease{ID: leaseKey("L1"), Mode: Exclusive, Token: 1, ExpiresAt: 10 * sec, TTL: 10 * sec, MaybeGone: true}
	s1 := state(sec, 2, gone)
	cases := []struct {
		name    string
		in      LockInput
		out     LockOutput
		wantErr error
		leases  int
		logTime int64
	}{
		{"conflicting grant", acq("b", Exclusive, sec), grant("L2", 2, 5*sec, 6*sec), nil, 1, 5 * sec},
		{"status without it", status(), holders(2 * sec), nil, 0, 2 * sec},
		{"status with it", status(), holders(2*sec, hv("L1", Exclusive, 1, 10*sec)), nil, 1, 2 * sec},
		{"status with it, wrong expiry", status(), holders(2*sec, hv("L1", Exclusive, 1, 20*sec)), errStatusMismatch, 0, 0},
		{"not_holder", rel("L1"), notHolderAt(2 * sec), nil, 0, 2 * sec},
		{"not_holder without log time deduces nothing", renew("L1", 0), notHolderAt(0), nil, 0, sec},
		{"release", rel("L1"), ok(2 * sec), nil, 0, 2 * sec},
		{"renew", renew("L1", 0), renewed(2*sec, 12*sec), nil, 1, 2 * sec},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, err := exact.step(s1, tc.in, tc.out)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			n := next[0]
			if len(next) != 1 || len(n.leases) != tc.leases || n.logTime != tc.logTime {
				t.Fatalf("got %v, want %d leases at %s", next, tc.leases, fmtTime(tc.logTime))
			}
			if tc.leases == 1 && n.find("L1") >= 0 && n.leases[n.find("L1")].MaybeGone {
				t.Fatalf("a definite answer must settle the doubt: %v", n)
			}
		})
	}
}

// TestLockPlan checks how the planner splits a resource and what it tells each stepped op: set-aside ops (no effect, or indefinite) go to a second partition; indefinite ops count for ops returning at or after their call.
func TestLockPlan(t *testing.T) {
	ops := []porcupine.Operation{
		op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, sec, 11*sec)),
		op(1, 0, sec, acq("b", Exclusive, 10*sec), LockOutput{LogTimeNs: sec}),
		op(2, 2*sec, 0, acq("c", Exclusive, 10*sec), unknown()),
		op(0, 2*sec, 0, rel("L1"), unknown()),
		op(3, 3*sec, 4*sec, status(), LockOutput{Code: "unavailable"}),
		op(4, 3*sec, 4*sec, renew("L1", 0), notHolderAt(0)),
		op(5, sec, 2*sec, status(), holders(2*sec)),
		op(6, 5*sec, 6*sec, LockInput{Op: Status, Resource: "other"}, holders(5*sec)),
	}
	parts := Lock.Partition(ops)
	if len(parts) != 3 || len(parts[0]) != 3 || len(parts[1]) != 4 || len(parts[2]) != 1 {
		t.Fatalf("partition sizes: %d parts %v", len(parts), parts)
	}
	for _, o := range parts[1] {
		if !o.Input.(lockCall).aside {
			t.Errorf("%v should be set aside", o.Input)
		}
	}
	cases := []struct {
		op                     int // in parts[0]
		timed                  bool
		indefinite, phantoms   int
		decided, timedPosition int64
	}{
		{0, true, 0, 0, sec, 0},
		{1, false, 1, 1, 0, 0},      // not_holder without log time, returns after both indefinite calls
		{2, true, 1, 1, 2 * sec, 1}, // status returning exactly at their call: closed intervals
	}
	for _, tc := range cases {
		c := parts[0][tc.op].Input.(lockCall)
		if c.timed != tc.timed || c.indefinite != tc.indefinite || c.phantoms != tc.phantoms || (c.timed && (c.decided != tc.decided || int64(c.timedIndex) != tc.timedPosition)) {
			t.Errorf("op %d (%s): got %+v", tc.op, c.Op, c)
		}
	}
	if in := LockInputOf(parts[0][0].Input); !reflect.DeepEqual(in, ops[0].Input) {
		t.Errorf("LockInputOf = %+v", in)
	}
}

// TestLogOrderRule checks the pruning rule directly: log time may not pass a timed op already called but not yet linearized, may pass one called later, and the rule never rejects a history the reference accepts.
func TestLogOrderRule(t *testing.T) {
	plan := &resourcePlan{timed: []timedOp{{decided: sec, call: 0}, {decided: 2 * sec, call: 500 * ms}, {decided: 3 * sec, call: 5 * sec}}}
	cases := []struct {
		name     string
		ahead    []int
		from, to int64
		ret      int64
		want     bool
	}{
		{"no move", nil, sec, sec, 4 * sec, true},
		{"skips a called op", nil, 0, 2500 * ms, 4 * sec, false},
		{"passes a linearized op", []int{0, 1}, 0, 2500 * ms, 4 * sec, true},
		{"passes an op called after its return", []int{0, 1}, 0, 4 * sec, 4 * sec, true},
		{"passes an op called at its return", []int{0, 1}, 0, 4 * sec, 5 * sec, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := plan.inLogOrder(tc.ahead, tc.from, tc.to, tc.ret); got != tc.want {
				t.Fatalf("inLogOrder = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLockHistoriesIndefinite runs Porcupine on histories whose indefinite ops (or late grants) take effect at awkward points, which only the lazy merge (not a guessed position) explains.
func TestLockHistoriesIndefinite(t *testing.T) {
	cases := []struct {
		name  string
		legal bool
		ops   []porcupine.Operation
	}{
		{"release takes effect after a status still listing the lease", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 100*sec), grant("L1", 1, sec, 101*sec)),
			op(0, 2*sec, 0, rel("L1"), unknown()),
			op(1, 3*sec, 4*sec, status(), holders(3*sec, hv("L1", Exclusive, 1, 101*sec))),
			op(2, 5*sec, 6*sec, acq("b", Exclusive, 10*sec), grant("L2", 2, 5*sec, 15*sec)),
		}},
		{"release cannot act before its call", false, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 100*sec), grant("L1", 1, sec, 101*sec)),
			op(2, 2*sec, 3*sec, acq("b", Exclusive, 10*sec), grant("L2", 2, 2*sec, 12*sec)),
			op(0, 4*sec, 0, rel("L1"), unknown()),
		}},
		{"renew of a maybe-released lease, revealed by status", true, []porcupine.Operation{
			op(0, 0, sec, acq("a", Exclusive, 10*sec), grant("L1", 1, 0, 10*sec)),
			op(0, 2*sec, 0, renew("L1", 30*sec), unknown()),
			op(3, 2*sec, 0, rel("L1"), unknown()),
			op(1, 15*sec, 16*sec, status(), holders(15*sec, hv("L1", Exclusive, 1, 33*sec))),
		}},
		{"grant found 2ms late, listed by a status in between", true, []porcupine.Operation{
			op(0, 0, 10*sec, LockInput{Op: Acquire, Resource: "r", Mode: Exclusive, TTLNs: 3 * sec, Wait: true}, grant("L1", 1, 2002*ms, 5*sec)),
			op(1, sec, 3*sec, status(), holders(2001*ms, hv("L1", Exclusive, 1, 5*sec))),
		}},
		// leaderCrash seed 307 (results/findings/late-grant-renewed-expiry-model-gap/run-307): a
		// queued grant at 5.536 whose first attempt was answered late, at
		// 6.812, after a retry had delivered the lease and a renew at 6.300
		// had moved its expiry; a status at 5.678 listed it in between.
		{"late answer reports a renewed expiry, status listed the grant", true, seed307(7800*ms, 7800*ms)},
		{"late answer's expiry no renew explains, status listed the grant", false, seed307(7900*ms, 7800*ms)},
		// The same, as sweep 8 recorded it: the two answers rebuilt the
		// renewed expiry a millisecond apart (whole-ms rounding).
		{"late answer's renewed expiry a millisecond below the renew's", true, seed307(7799*ms, 7800*ms)},
		{"late answer's renewed expiry a millisecond above the renew's", true, seed307(7801*ms, 7800*ms)},
		{"late answer's expiry two milliseconds off the renew's", false, seed307(7802*ms, 7800*ms)},
		// leaderCrash seed 487 (sweep 8): the first attempt's answer shows
		// the lease as a renew at the answer's log time left it, so it
		// looks immediate; the status before it listed the grant.
		{"first attempt answered with the renewed lease, looking immediate", true, seed487(8427 * ms)},
		{"answer looking immediate that no renew explains, status listed the grant", false, seed487(8500 * ms)},
		{"late answer reports a renewed expiry, while another holder lived", false, []porcupine.Operation{
			op(3, 0, sec, acq("a", Exclusive, 10*sec), grant("L0", 24, 0, 10*sec)),
			op(0, 5*sec, 7795*ms, withReq(LockInput{Op: Acquire, Resource: "r", ClientID: "c5", Mode: Exclusive, TTLNs: 1500 * ms, Wait: true}, "c5-8"), grant("L1", 25, 6812*ms, 7800*ms)),
			op(2, 7206*ms, 7218*ms, renew("L1", 0), renewed(6300*ms, 7800*ms)),
		}},
		// multiShard seed 448 (results/findings/multishard-late-grant-model-gap): c5's
		// retry was answered late (from the dedupe table) with a grant of
		// 36.870, before c34's release at 37.157, unrenewed; c5 sent a
		// renew the instant it got the answer, which never applied.
		{"late answer with the grant's own expiry, a renew sent at its return", true, seed448(38837 * ms)},
		{"grant while a late answer's own expiry had not passed", false, seed448(38700 * ms)},
		// multiShard seed 453 (results/findings/multishard-retry-below-token-floor-model-gap): log time
		// stood still at 37.134 while c3's release granted the queued c7-44
		// #331 and then c17 got #337; c7's first attempt went unanswered,
		// its retry was answered from the dedupe table, still at 37.134.
		{"retry answers a grant made at the same log time before a higher token", true, seed453(ms453{})},
		{"low token granted to a request no earlier attempt left open", false, seed453(ms453{noFirst: true})},
		{"retried grant made while an exclusive holder lived", false, seed453(ms453{c17: Exclusive})},
		// unknown-as-unavailable: "unavailable" says the attempt was surely
		// not applied, so it left no grant for a retry to replay.
		{"retry of an attempt answered unavailable, below a higher token", false, seed453(ms453{firstCode: "unavailable"})},
		{"retried grant below a token of an earlier log time", false, seed453(ms453{c3Token: 333, firstCall: 39000 * ms})},
		{"retried grant below a token answered before the first attempt's call", false, seed453(ms453{firstCall: 42400 * ms})},
		{"retried grant with a token a status showed for another lease", false, seed453(ms453{status: true})},
		{"phantom called after the status returned", false, []porcupine.Operation{
			op(1, sec, 2*sec, status(), holders(sec, hv("P", Exclusive, 3, 20*sec))),
			op(0, 3*sec, 0, acq("a", Exclusive, 20*sec), unknown()),
		}},
		{"phantoms revealed by concurrent statuses", true, []porcupine.Operation{
			op(0, 0, 0, acq("a", Shared, 20*sec), unknown()),
			op(1, 0, 0, acq("b", Shared, 20*sec), unknown()),
			op(2, sec, 3*sec, status(), holders(2*sec, hv("P", Shared, 3, 20*sec))),
			op(3, sec, 3*sec, status(), holders(2*sec, hv("P", Shared, 3, 20*sec), hv("Q", Shared, 4, 20*sec))),
		}},
		{"one phantom revealed twice under two ids", false, []porcupine.Operation{
			op(0, 0, 0, acq("a", Exclusive, 20*sec), unknown()),
			op(2, sec, 2*sec, status(), holders(sec, hv("P", Exclusive, 3, 2500*ms))),
			op(4, 5*sec, 6*sec, status(), holders(5*sec, hv("Q", Exclusive, 4, 20*sec))),
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

// TestOrderedAgreesWithReference differentially checks the ordered model against the reference power-set model on simulated runs: on a correct server both accept (soundness), on a holder-ignoring one both reject (no lost bug).
func TestOrderedAgreesWithReference(t *testing.T) {
	reference := NewLockNondeterministic(LockOptions{TimeSlack: DefaultTimeSlack})
	ref := reference.ToModel()
	for seed := range uint64(12) {
		for _, buggy := range []bool{false, true} {
			t.Run(fmt.Sprintf("seed%d/buggy=%v", seed, buggy), func(t *testing.T) {
				history := simulateLocks(100+seed, 300, buggy)
				want := porcupine.CheckOperationsTimeout(ref, history, 20*time.Second)
				got := porcupine.CheckOperationsTimeout(Lock, history, 20*time.Second)
				if want == porcupine.Unknown || got != want {
					t.Fatalf("ordered %v, reference %v", got, want)
				}
				if buggy != (got == porcupine.Illegal) {
					t.Fatalf("buggy=%v judged %v", buggy, got)
				}
			})
		}
	}
}

// seed307 is the history of leaderCrash seed 307 on "r1", cut to the
// request c5-8: its first attempt answered late with expiry answered, a
// status listing the grant before that, the retry, and a renew (TTL 0) at
// 6.300 answering renewed.
func seed307(answered, renewedTo int64) []porcupine.Operation {
	c58 := withReq(LockInput{Op: Acquire, Resource: "r", ClientID: "c5", Mode: Shared, TTLNs: 1500 * ms, Wait: true}, "c5-8")
	return []porcupine.Operation{
		op(0, 5*sec, 7795*ms, c58, grant("L1", 25, 6812*ms, answered)),
		op(1, 5600*ms, 5700*ms, status(), holders(5678*ms, hv("L1", Shared, 25, 7035*ms))),
		op(2, 7195*ms, 7206*ms, c58, grant("L1", 25, 6290*ms, 7036*ms)),
		op(2, 7206*ms, 7218*ms, renew("L1", 0), renewed(6300*ms, renewedTo)),
	}
}

// seed487 is the history of leaderCrash seed 487 on "r2" (sweep 8), cut
// to the request c5-5: a status at 6.722 lists its grant (#32, made at
// 6.636); the retry, called after that status returned, is answered from
// the dedupe table; c5 renews (TTL 0) at 6.736+... answering renewedTo;
// then the first attempt is answered with the lease as the renew left it,
// which looks like a grant made at the answer's log time.
func seed487(renewedTo int64) []porcupine.Operation {
	c55 := withReq(LockInput{Op: Acquire, Resource: "r", ClientID: "c5", Mode: Exclusive, TTLNs: 1231 * ms, Wait: true}, "c5-5")
	return []porcupine.Operation{
		op(1, 8456*ms, 8465*ms, status(), holders(6722*ms, hv("L5", Exclusive, 32, 7867*ms))),
		op(5, 8918*ms, 8930*ms, c55, grant("L5", 32, 7187*ms, 7867*ms)),
		op(5, 8930*ms, 8939*ms, renew("L5", 0), renewed(7196*ms, renewedTo)),
		op(0, 7815*ms, 10110*ms, c55, grant("L5", 32, 7196*ms, 8427*ms)),
	}
}

// seed448 is the history of multiShard seed 448 on "r20", cut to c5's
// lease: c34's shared lease and release, c5's retry of c5-38 answered at
// 38.684 with the grant of 36.870 (#316, expiry 38.736), its renew with an
// unknown outcome, sent as the answer came, and c1's exclusive grant at
// c1At (recorded: 38.837).
func seed448(c1At int64) []porcupine.Operation {
	return []porcupine.Operation{
		op(34, 31190*ms, 31198*ms, acq("c34", Shared, 1875*ms), grant("L34", 317, 36986*ms, 38861*ms)),
		op(34, 31361*ms, 31373*ms, rel("L34"), ok(37157*ms)),
		op(5, 32886*ms, 32898*ms, withReq(LockInput{Op: Acquire, Resource: "r", ClientID: "c5", Mode: Shared, TTLNs: 1867 * ms, Wait: true}, "c5-38"), grant("L5", 316, 38684*ms, 38736*ms)),
		op(5, 32898*ms, 0, renew("L5", 0), unknown()),
		op(1, 33042*ms, 33049*ms, acq("c1", Exclusive, 1198*ms), grant("L1", 333, c1At, c1At+1198*ms)),
	}
}

// ms453 varies seed453; the zero value is the recorded history.
type ms453 struct {
	noFirst   bool   // leave c7's first attempt out
	firstCode string // its answer's error code ("": unknown outcome)
	firstCall int64  // its call (zero: 39.211)
	c17       string // c17's mode (zero: shared)
	c3Token   uint64 // c3's token (zero: #317)
	status    bool   // add a status at 37.134 listing another lease with #331
}

// seed453 is the history of multiShard seed 453 on "r30", cut to the
// request c7-44: c3's lease, c7's first attempt, c3's release granting
// it, c17's grant, and c7's retry answered with #331, all at log time
// 37.134.
func seed453(v ms453) []porcupine.Operation {
	c744 := withReq(LockInput{Op: Acquire, Resource: "r", ClientID: "c7", Mode: Shared, TTLNs: 1218 * ms, Wait: true}, "c7-44")
	ops := []porcupine.Operation{
		op(0, 39072*ms, 39079*ms, acq("c3", Exclusive, 954*ms), grant("L3", cmp.Or(v.c3Token, 317), 36759*ms, 37713*ms)),
		op(0, 40487*ms, 40494*ms, rel("L3"), ok(37134*ms)),
		op(2, 42300*ms, 42306*ms, acq("c17", cmp.Or(v.c17, Shared), 1035*ms), grant("L17", 337, 37134*ms, 38169*ms)),
		op(1, 42814*ms, 42820*ms, c744, grant("L7", 331, 37134*ms, 38352*ms)),
	}
	if !v.noFirst {
		first, ret := unknown(), int64(0)
		if v.firstCode != "" {
			first, ret = LockOutput{Code: v.firstCode}, cmp.Or(v.firstCall, 39211*ms)+5*ms
		}
		ops = append(ops, op(1, cmp.Or(v.firstCall, 39211*ms), ret, c744, first))
	}
	if v.status {
		ops = append(ops, op(3, 42000*ms, 42010*ms, status(), holders(37134*ms, hv("L9", Shared, 331, 38000*ms))))
	}
	return ops
}

// TestReferenceLateRenewedGrant: the reference judges seeds 307 and 448
// as the ordered model does (both get the renew-explained late grant from the
// partition).
func TestReferenceLateRenewedGrant(t *testing.T) {
	reference := NewLockNondeterministic(LockOptions{TimeSlack: DefaultTimeSlack})
	ref := reference.ToModel()
	if got := porcupine.CheckOperationsTimeout(ref, seed307(7800*ms, 7800*ms), 5*time.Second); got != porcupine.Ok {
		t.Fatalf("legal history judged %v", got)
	}
	if got := porcupine.CheckOperationsTimeout(ref, seed307(7900*ms, 7800*ms), 5*time.Second); got != porcupine.Illegal {
		t.Fatalf("unexplained expiry judged %v", got)
	}
	if got := porcupine.CheckOperationsTimeout(ref, seed448(38837*ms), 5*time.Second); got != porcupine.Ok {
		t.Fatalf("seed 448 judged %v", got)
	}
	if got := porcupine.CheckOperationsTimeout(ref, seed448(38700*ms), 5*time.Second); got != porcupine.Illegal {
		t.Fatalf("seed 448 with a grant before the expiry judged %v", got)
	}
}

// TestMarkRenewed: which late grants the partition marks as possibly
// showing a renewed expiry, and the log time the grant came by.
func TestMarkRenewed(t *testing.T) {
	c58 := withReq(acq("c5", Shared, 1500*ms), "c5-8")
	late := op(0, 5*sec, 8*sec, c58, grant("L1", 25, 6812*ms, 7800*ms))
	cases := []struct {
		name string
		ops  []porcupine.Operation
		want int64
	}{
		{"renew answered that expiry", []porcupine.Operation{late, op(2, 7*sec, 7*sec, renew("L1", 0), renewed(6300*ms, 7800*ms))}, 6300 * ms},
		{"renew answered that expiry a millisecond off", []porcupine.Operation{late, op(2, 7*sec, 7*sec, renew("L1", 0), renewed(6300*ms, 7801*ms))}, 6300 * ms},
		{"renew answered another expiry", []porcupine.Operation{late, op(2, 7*sec, 7*sec, renew("L1", 0), renewed(6300*ms, 7802*ms))}, 0},
		{"renew of another lease", []porcupine.Operation{late, op(2, 7*sec, 7*sec, renew("L2", 0), renewed(6300*ms, 7800*ms))}, 0},
		{"indefinite renew called before the answer", []porcupine.Operation{late, op(2, 7*sec, 0, renew("L1", 0), unknown())}, 6812 * ms},
		{"indefinite renew called after the answer", []porcupine.Operation{late, op(2, 9*sec, 0, renew("L1", 0), unknown())}, 0},
		// A grant that looks immediate may be a late answer showing a renew
		// made at its log time (leaderCrash seed 487); only a definite
		// renew with that expiry by then marks it.
		{"looks immediate, renew answered that expiry at its log time", []porcupine.Operation{op(0, 5*sec, 8*sec, c58, grant("L1", 25, 6300*ms, 7800*ms)), op(2, 7*sec, 7*sec, renew("L1", 0), renewed(6300*ms, 7800*ms))}, 6300 * ms},
		{"looks immediate, renew answered later", []porcupine.Operation{op(0, 5*sec, 8*sec, c58, grant("L1", 25, 6300*ms, 7800*ms)), op(2, 7*sec, 7*sec, renew("L1", 0), renewed(6310*ms, 7810*ms))}, 0},
		{"looks immediate, indefinite renew", []porcupine.Operation{op(0, 5*sec, 8*sec, c58, grant("L1", 25, 6300*ms, 7800*ms)), op(2, 7*sec, 0, renew("L1", 0), unknown())}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parts := partitionByResource(tc.ops)
			if got := parts[0][0].Input.(LockInput).renewedAt; got != tc.want {
				t.Fatalf("renewedAt = %s, want %s", fmtTime(got), fmtTime(tc.want))
			}
		})
	}
}

// TestMarkRetried: which grants the partition marks as possible replays of
// an earlier attempt left in doubt.
func TestMarkRetried(t *testing.T) {
	c744 := withReq(acq("c7", Shared, 1218*ms), "c7-44")
	retry := op(1, 42*sec, 43*sec, c744, grant("L7", 331, 37134*ms, 38352*ms))
	first := op(1, 39*sec, 0, c744, unknown())
	cases := []struct {
		name string
		ops  []porcupine.Operation
		want bool
	}{
		{"indefinite attempt called before", []porcupine.Operation{retry, first}, true},
		{"indefinite attempt called after", []porcupine.Operation{retry, op(1, 44*sec, 0, c744, unknown())}, false},
		{"earlier attempt answered", []porcupine.Operation{retry, op(1, 39*sec, 40*sec, c744, ok(37*sec))}, false},
		{"earlier attempt unavailable", []porcupine.Operation{retry, op(1, 39*sec, 40*sec, c744, LockOutput{Code: "unavailable"})}, false},
		{"indefinite attempt of another request", []porcupine.Operation{retry, op(1, 39*sec, 0, withReq(acq("c7", Shared, 1218*ms), "c7-43"), unknown())}, false},
		{"no request id", []porcupine.Operation{op(1, 42*sec, 43*sec, acq("c7", Shared, 1218*ms), grant("L7", 331, 37134*ms, 38352*ms)), op(1, 39*sec, 0, acq("c7", Shared, 1218*ms), unknown())}, false},
		{"answered late (a late grant already)", []porcupine.Operation{op(1, 42*sec, 43*sec, c744, grant("L7", 331, 37500*ms, 38352*ms)), first}, false},
		{"higher token answered after the attempt's call", []porcupine.Operation{retry, first, op(2, 41*sec, 41*sec, acq("c17", Shared, sec), grant("L17", 337, 37134*ms, 38134*ms))}, true},
		{"higher token answered before the attempt's call", []porcupine.Operation{retry, first, op(2, 38*sec, 38*sec, acq("c17", Shared, sec), grant("L17", 337, 37134*ms, 38134*ms))}, false},
		{"lower token answered before the attempt's call", []porcupine.Operation{retry, first, op(2, 38*sec, 38*sec, acq("c17", Shared, sec), grant("L17", 330, 37134*ms, 38134*ms))}, true},
		{"same token shown for another lease", []porcupine.Operation{retry, first, op(2, 41*sec, 41*sec, status(), holders(37134*ms, hv("L9", Shared, 331, 38*sec)))}, false},
		{"same token shown for its lease", []porcupine.Operation{retry, first, op(2, 41*sec, 41*sec, status(), holders(37134*ms, hv("L7", Shared, 331, 38352*ms)))}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parts := partitionByResource(tc.ops)
			if got := parts[0][0].Input.(LockInput).retried; got != tc.want {
				t.Fatalf("retried = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReferenceRetriedGrant: the reference judges the seed 453 variants as
// the ordered model does (both get the retried mark from the partition).
func TestReferenceRetriedGrant(t *testing.T) {
	reference := NewLockNondeterministic(LockOptions{TimeSlack: DefaultTimeSlack})
	ref := reference.ToModel()
	for _, tc := range []struct {
		v    ms453
		want porcupine.CheckResult
	}{
		{ms453{}, porcupine.Ok},
		{ms453{noFirst: true}, porcupine.Illegal},
		{ms453{c17: Exclusive}, porcupine.Illegal},
		{ms453{firstCode: "unavailable"}, porcupine.Illegal},
		{ms453{c3Token: 333, firstCall: 39000 * ms}, porcupine.Illegal},
		{ms453{firstCall: 42400 * ms}, porcupine.Illegal},
		{ms453{status: true}, porcupine.Illegal},
	} {
		if got := porcupine.CheckOperationsTimeout(ref, seed453(tc.v), 5*time.Second); got != tc.want {
			t.Fatalf("%+v judged %v, want %v", tc.v, got, tc.want)
		}
	}
}
