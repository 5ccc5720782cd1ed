//go:build !lockstep_bugs

package realnet

import (
	"fmt"
	"testing"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/scenarios"
)

// TestShortNetnsScenario: goal — packet-level partitions work: with each
// member in its own network namespace, isolating the leader drops its
// packets (it steps down for want of a quorum, which only its followers'
// silence makes it do) and the run reaches the simulator's verdict
// (success). Method: Short's workload for 9 s with only the leader
// isolation, members logging Raft's warnings; skipped, saying why, where
// the machine cannot make namespaces (not root, no ip or nft). Untagged
// only: the lockstep_bugs pass of make test runs this package again for
// its bug modes.
func TestShortNetnsScenario(t *testing.T) {
	if err := NetnsSupport(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	short := func() (s scenarios.Scenario, err error) {
		s, err = Short()
		if err != nil {
			return s, err
		}
		s.Name = "realnetShortNetns"
		s.Schedule, s.DurationMs = s.Schedule[:1], 9_000
		return s, s.Validate()
	}
	out := runPinned(t, short, BuildTags(false), Options{Seed: 1, Netns: true, LockdArgs: []string{"--raft-log"}})
	requirePerformed(t, out, "isolateLeader")
	churn := ""
	for _, p := range out.Params {
		if p.Name == "raft_churn" {
			churn = p.Value
		}
	}
	var elections, stepDowns int
	if _, err := fmt.Sscanf(churn, "%d elections started, %d leader step-downs", &elections, &stepDowns); err != nil {
		t.Fatalf("raft_churn %q: %v", churn, err)
	}
	if stepDowns == 0 {
		t.Fatalf("the isolated leader never stepped down for want of a quorum (%s): the cut dropped nothing", churn)
	}
	if out.Result.Verdict != checker.Success || !out.AsExpected {
		t.Fatalf("verdict %s, want success", out.Result.Verdict)
	}
}
