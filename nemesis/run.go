package nemesis

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstep/lockstep/core/ctxtime"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Run executes sched against c, one step at a time: each starts at its At
// (from the call to Run) or, if the previous step overran, right after it.
// It checks the whole schedule before injecting anything. A step that is
// not applicable now (e.g. no leader) is logged and skipped; any other
// error stops the run, as does ctx (its error is returned).
func Run(ctx context.Context, c Cluster, sched Schedule, rng *rand.Rand, rec Recorder) error {
	if err := sched.Validate(); err != nil {
		return fmt.Errorf("run schedule: %w", err)
	}
	start := time.Now()
	for i, st := range sched {
		if err := ctxtime.Sleep(ctx, time.Until(start.Add(st.At))); err != nil {
			return err
		}
		n, _ := ByName(st.Nemesis) // Validate found it
		err := n.Inject(ctx, c, rng, st.Duration, rec)
		switch {
		case errors.Is(err, ErrNotApplicable):
			slog.Info("nemesis step skipped", "step", i, "nemesis", st.Nemesis, "err", err)
		case err != nil:
			return fmt.Errorf("run schedule: step %d: %w", i, err)
		}
	}
	return nil
}
