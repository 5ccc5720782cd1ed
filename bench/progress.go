package bench

import (
	"fmt"
	"sync"
	"time"
)

// startProgress prints one line per second to w.Progress until the returned
// stop is called: throughput over the last second, totals, and p99 so far.
func (r *run) startProgress() (stop func()) {
	if r.w.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		lastOps := r.rec.ops.Load()
		lastAt := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				ops := r.rec.ops.Load()
				rate := float64(ops-lastOps) / now.Sub(lastAt).Seconds()
				lastOps, lastAt = ops, now
				phase := "run"
				if !r.rec.measured(r.rec.now()) {
					phase = "warmup"
				}
				fmt.Fprintf(r.w.Progress, "%s %s t=%3.0fs ops/s=%9.0f ops=%d errors=%d timeouts=%d acq_p99=%v\n",
					r.w.Label, phase, time.Since(r.rec.base).Seconds(), rate, ops,
					r.rec.errSum.Load(), r.rec.timeouts.Load(), r.rec.acquire.Quantile(0.99).Round(time.Microsecond))
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
