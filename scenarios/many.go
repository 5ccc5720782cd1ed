package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstep/lockstep/core/api"
	lockclient "github.com/lockstep/lockstep/core/client"
)

// resourceName is the name of resource i (1-based). With multi requests
// on, names carry one of manyTags() hash tags, so those that share a tag
// share a shard and can be taken together.
func (wl *workload) resourceName(i int) string {
	if wl.w.ManyProb <= 0 {
		return fmt.Sprintf("r%d", i)
	}
	return fmt.Sprintf("{g%d}:r%d", (i-1)%wl.manyTags()+1, i)
}

// manyTags is the number of hash tags: about four resources each.
func (wl *workload) manyTags() int { return max(1, wl.w.Resources/4) }

// manyResources draws 2-4 distinct resources sharing resource i's tag, in
// a random order (request order is the client's to choose).
func (wl *workload) manyResources(cl *client, i int) []string {
	tags := wl.manyTags()
	var same []string
	for j := (i-1)%tags + 1; j <= max(1, wl.w.Resources); j += tags {
		same = append(same, wl.resourceName(j))
	}
	cl.rng.Shuffle(len(same), func(a, b int) { same[a], same[b] = same[b], same[a] })
	return same[:min(len(same), 2+cl.rng.IntN(3))]
}

// cycleMany is cycle for an acquire_many: the same options, retries and
// give-ups, then every lease held, written through and released together.
func (wl *workload) cycleMany(ctx context.Context, cl *client, resources []string) {
	opts, giveUp := wl.plan(cl)
	sent := time.Now()
	leases, err := wl.acquireMany(ctx, cl, resources, opts, giveUp)
	if err != nil && retryable(err) && cl.rng.Float64() < wl.w.RetryProb {
		opts.Wait = max(0, opts.Wait-time.Since(sent))
		leases, err = wl.acquireMany(ctx, cl, resources, opts, 0)
	}
	if err != nil {
		return
	}
	if opts.Mode == api.Exclusive {
		for _, l := range leases {
			wl.rec.fenced.RecordGrantReturned(l.Resource(), cl.name, l.ID(), l.Token())
		}
	}
	wl.hold(ctx, cl, leases, opts)
}

// acquireMany asks for resources at once; giveUp > 0 abandons the call
// after that long.
func (wl *workload) acquireMany(ctx context.Context, cl *client, resources []string, opts lockclient.AcquireOptions, giveUp time.Duration) ([]*lockclient.Lease, error) {
	cctx, cancel := context.WithTimeout(withWireRequestID(ctx, opts.RequestID), wl.callLimit(opts, giveUp))
	defer cancel()
	return cl.apiFor(wl.c, resources[0]).AcquireMany(cctx, resources, lockclient.AcquireManyOptions{AcquireOptions: opts})
}
