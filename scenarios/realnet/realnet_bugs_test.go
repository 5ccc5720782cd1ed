//go:build lockstep_bugs

package realnet

import (
	"testing"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/core/node"
)

// TestShortScenarioCatchesBug: goal — the real-process run can fail: a
// lockd whose followers grant from local state (BugFollowerGrant) is
// reported by the checker. Method: Short on a lockd built with
// lockstep_bugs and --fault-bug follower-grant.
func TestShortScenarioCatchesBug(t *testing.T) {
	out := runShort(t, BuildTags(true), Options{Seed: 1, Bug: node.BugFollowerGrant})
	if out.Result.Verdict != checker.Failure || !out.AsExpected {
		t.Fatalf("verdict %s, want the bug reported", out.Result.Verdict)
	}
}
