package nemesis

import (
	"context"
	"fmt"
	"github.com/lockstep/lockstep/core/ctxtime"
	"math/rand/v2"
	"time"
)

// pauseClient stops one random workload client for the window: the holder
// stops renewing past its TTL, then resumes and writes with its old token
// (the workload does that part; the fenced store must reject the write).
type pauseClient struct{}

var _ Nemesis = pauseClient{}

func (pauseClient) Name() string { return "pauseClient" }

func (pauseClient) Available(c Cluster) bool { return c.Clients() > 0 }

// Inject pauses the client and waits out d. The cluster resumes the client
// itself after d (Cluster has no early resume), so the recorded window is
// always the full d even if ctx ends first.
func (p pauseClient) Inject(ctx context.Context, c Cluster, rng *rand.Rand, d time.Duration, rec Recorder) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !p.Available(c) {
		return fmt.Errorf("%s: %w", p.Name(), ErrNotApplicable)
	}
	client := rng.IntN(c.Clients())
	start := time.Now()
	c.PauseClient(client, d)
	held := ctxtime.Sleep(ctx, d)
	rec.Fault(p.Name(), fmt.Sprintf("client%d", client), start, start.Add(d))
	return held
}
