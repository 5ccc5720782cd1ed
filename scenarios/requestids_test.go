package scenarios

import (
	"context"
	"slices"
	"testing"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/core/placement"
	"github.com/lockstep/lockstep/models"
)

// TestShardedRunsReuseRequestIDsAcrossShards: goal — the multi-shard
// scenarios put per-shard dedupe to the test and the checker judges it:
// a run reuses a client's request id for another resource on the same
// shard (answered request_id_reused) and on another shard (answered as a
// request of its own), passes, and fails once one cross-shard answer is
// turned into request_id_reused. Method: shardLeaderCrash at seed 1, its
// history saved and loaded; count both kinds of reuse by core/placement;
// re-check the history with one such answer changed.
func TestShardedRunsReuseRequestIDsAcrossShards(t *testing.T) {
	s, err := ByName("shardLeaderCrash")
	if err != nil {
		t.Fatal(err)
	}
	out := runOne(t, s, RunOptions{Seed: 1, ResultsDir: t.TempDir(), Persist: true})
	if out.Result.Verdict != checker.Success {
		t.Fatalf("verdict %s: %v", out.Result.Verdict, out.Result.Violations)
	}
	h, err := checker.Load(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ client, id string }
	first := map[key]models.LockInput{}
	sameRefused, otherAnswered := 0, -1
	for i, op := range h.Ops {
		in := op.Input
		if in.Op != models.Acquire || in.RequestID == "" || op.Output.Unknown {
			continue
		}
		k := key{in.ClientID, in.RequestID}
		f, seen := first[k]
		if !seen {
			first[k] = in
			continue
		}
		if f.Resource == in.Resource {
			continue
		}
		same := placement.Of(f.Resource, s.Groups) == placement.Of(in.Resource, s.Groups)
		switch {
		case same && op.Output.Code == models.CodeRequestIDReused:
			sameRefused++
		case !same && op.Output.Code == "" && !op.Output.Granted && otherAnswered < 0:
			otherAnswered = i
		}
	}
	t.Logf("same-shard reuses refused: %d; a cross-shard reuse answered on its own: op %d", sameRefused, otherAnswered)
	if sameRefused == 0 || otherAnswered < 0 {
		t.Fatalf("the run reused no id across resources of one shard (%d) or of two (%d)", sameRefused, otherAnswered)
	}
	h.Ops[otherAnswered].Output = models.LockOutput{Code: models.CodeRequestIDReused}
	res := checker.Check(context.Background(), h, out.Checks)
	if !slices.ContainsFunc(res.Violations, func(v checker.Violation) bool { return v.Check == checker.CheckRequestIDs }) {
		t.Fatalf("a cross-shard reuse refused as reused passed the checker: %s %v", res.Verdict, res.Violations)
	}
}
