//go:build !lockstep_bugs

package realnet

import (
	"path/filepath"
	"testing"

	"github.com/lockstep/lockstep/checker"
)

// TestShortDiskScenario: goal — the simulator's disk nemeses act on real
// processes: the leader's WAL syncs are slowed, a follower's fail (its
// log breaks and it is restarted when the disk heals), and the run still
// reaches the simulator's verdict (success). Method: ShortDisk with a
// fixed seed; both faults must have a window, and the failing disk must
// have failed at least one real sync. Untagged only: the lockstep_bugs
// pass of make test runs this package again for its bug modes.
func TestShortDiskScenario(t *testing.T) {
	out := runPinned(t, ShortDisk, BuildTags(false), Options{Seed: 1})
	requirePerformed(t, out, "slowDiskLeader", "failDiskFollower")
	var rn struct {
		FailedLogSyncs map[string]int64 `json:"failed_log_syncs"`
	}
	readJSON(t, filepath.Join(out.Dir, "realnet.json"), &rn)
	failed := int64(0)
	for _, n := range rn.FailedLogSyncs {
		failed += n
	}
	if failed == 0 {
		t.Fatalf("failed log syncs by member %v: the failing disk failed no sync", rn.FailedLogSyncs)
	}
	if out.Result.Verdict != checker.Success || !out.AsExpected {
		t.Fatalf("verdict %s, want success", out.Result.Verdict)
	}
}
