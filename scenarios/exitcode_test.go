package scenarios

import (
	"testing"

	"github.com/lockstep/lockstep/checker"
)

// TestExitCode: goal — an unexpected result exits 130 when a check could
// not finish, 129 when any correctness check failed and 128 when only
// liveness did. Method: one result of each kind.
func TestExitCode(t *testing.T) {
	liveness := checker.Violation{Check: checker.CheckLiveness}
	fencing := checker.Violation{Check: checker.CheckFencing}
	for _, tc := range []struct {
		name string
		r    checker.Result
		want int
	}{
		{"unknown", checker.Result{Verdict: checker.Unknown, Violations: []checker.Violation{fencing}}, ExitUnknown},
		{"liveness only", checker.Result{Verdict: checker.Failure, Violations: []checker.Violation{liveness, liveness}}, ExitLiveness},
		{"correctness", checker.Result{Verdict: checker.Failure, Violations: []checker.Violation{liveness, fencing}}, ExitCorrectness},
	} {
		if got := ExitCode(tc.r); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestParseSeedRange: goal — a..b with a <= b parses, anything else is
// refused. Method: good and bad values.
func TestParseSeedRange(t *testing.T) {
	if lo, hi, err := ParseSeedRange("3..7"); err != nil || lo != 3 || hi != 7 {
		t.Errorf("3..7: %d..%d, %v", lo, hi, err)
	}
	if lo, hi, err := ParseSeedRange("-2..-2"); err != nil || lo != -2 || hi != -2 {
		t.Errorf("-2..-2: %d..%d, %v", lo, hi, err)
	}
	for _, bad := range []string{"7..3", "3", "3..", "..3", "a..b", "1...2"} {
		if _, _, err := ParseSeedRange(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
