package scenarios

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockstep/lockstep/checker"
)

// savedRuns are runs the sweeps saved under results/findings, each read by
// hand (its NOTE.md). Native runs cannot be replayed, but their histories
// re-check exactly, so they pin the checker and the models: a model error
// fixed stays fixed (verdict success), and a real failure stays reported
// by the check that found it.
var savedRuns = []struct {
	dir     string
	verdict checker.Verdict
	checks  []string // the checks that must report it, when verdict is failure
	why     string
}{
	{"grant-outlives-restarted-node", checker.Failure, []string{"liveness"},
		"a grant outlived its caller whose node came back with its disk (server fixed since: abandoned-attempt cancel)"},
	{"release-lost-to-back-to-back-leader-kills", checker.Failure, []string{"liveness"},
		"a holder's release lost to back-to-back leader kills; its waiters waited past the bound"},
	{"late-grant-renewed-expiry-model-gap/run-307", checker.Success, nil,
		"model error: a late grant answered with the expiry of a renew made meanwhile (models markRenewed)"},
	{"multishard-retry-below-token-floor-model-gap/run-453", checker.Success, nil,
		"model error: a retry answered with a grant made at its log time before higher tokens (models markRetried)"},
	{"multishard-retry-below-token-floor-model-gap/run-488", checker.Success, nil,
		"model error: the same shape as run-453"},
	{"leader-clock-step-read-as-stall/run-396", checker.Success, nil,
		"checker error: a leader clock step put group 3's log time ahead of virtual time, so waits inside the last fault counted as stable (checker stableLogTimes)"},
	{"multishard-late-grant-model-gap/run-448", checker.Success, nil,
		"model error: a late grant's own expiry taken for a renewed one, though the grant predated the model's log time (models lateGrant)"},
	{"late-grant-renewed-expiry-model-gap/run-307-expiry-ms", checker.Success, nil,
		"model error: run-307 again, the late answer's renewed expiry read 1 ms off the renew's (models markRenewed, expiryReadPrecision)"},
	{"late-grant-renewed-expiry-model-gap/run-487", checker.Success, nil,
		"model error: a first attempt answered after its retry and a renew at one log time, so the answer looked like an immediate grant (models markRenewed, grantStep)"},
}

// TestSavedRunsKeepTheirVerdicts: goal — every saved finding re-checks to
// the verdict its NOTE.md argues for. Method: scenarios.Recheck (what
// locksim -check runs) on each directory, gzipped files included.
func TestSavedRunsKeepTheirVerdicts(t *testing.T) {
	for _, r := range savedRuns {
		t.Run(r.dir, func(t *testing.T) {
			res, _, err := Recheck(context.Background(), filepath.Join("..", "results", "findings", r.dir))
			if err != nil {
				t.Fatal(err)
			}
			if res.Stats.Ops == 0 {
				t.Fatal("no operations loaded: a history read as empty passes every check")
			}
			if res.Verdict != r.verdict {
				t.Fatalf("verdict %s, want %s (%s): %v", res.Verdict, r.verdict, r.why, res.Violations)
			}
			for _, c := range r.checks {
				if !slices.ContainsFunc(res.Violations, func(v checker.Violation) bool { return v.Check == c }) {
					t.Errorf("no %s violation (%s): %v", c, r.why, res.Violations)
				}
			}
		})
	}
}
