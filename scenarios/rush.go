package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"

	"github.com/lockstep/lockstep/core/api"
	lockclient "github.com/lockstep/lockstep/core/client"
)

// restartRush sends clients to a node the moment it restarts
// (Workload.RestartRushProb), as clients pinned to a node, or a balancer
// handing new connections to the node that just came back, do. Their
// acquires reach the log around the new process's hello, some before it;
// they are the live process's callers all the same, and the hello must
// leave them queued.
type restartRush struct {
	mu     sync.Mutex
	rng    *rand.Rand
	ctx    context.Context
	closed bool
	n      int
	wg     sync.WaitGroup
}

func newRestartRush(seed uint64) *restartRush {
	return &restartRush{rng: rand.New(rand.NewPCG(seed, 13))}
}

// open starts taking restarts for the run ctx bounds.
func (r *restartRush) open(ctx context.Context) {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
}

// close stops taking restarts and waits for the rushes under way.
func (r *restartRush) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.wg.Wait()
}

// rushRestarted is told that member id's new process started: each client,
// with probability RestartRushProb, sends it one waiting acquire at once.
func (wl *workload) rushRestarted(id string) {
	if wl.w.RestartRushProb <= 0 {
		return
	}
	if gw, ok := wl.c.(Gatewayed); ok && gw.GatewayURL() != "" {
		return // clients reach only the gateway
	}
	resources := wl.resourcesOn(id)
	r := wl.rush
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.ctx == nil || r.ctx.Err() != nil || len(resources) == 0 {
		return
	}
	for _, cl := range wl.clients {
		if r.rng.Float64() >= wl.w.RestartRushProb {
			continue
		}
		r.n++
		opts := lockclient.AcquireOptions{TTL: between(r.rng, wl.w.TTLMs), Mode: api.Exclusive,
			Wait: between(r.rng, wl.w.WaitMs), Policy: wl.policy, RequestID: fmt.Sprintf("rush-%d", r.n)}
		resource := resources[r.rng.IntN(len(resources))]
		random := rand.New(rand.NewPCG(r.rng.Uint64(), r.rng.Uint64()))
		ctx := r.ctx
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			wl.rushOne(ctx, cl, id, resource, opts, random)
		}()
	}
}

// resourcesOn lists the workload's resources whose group member id serves.
func (wl *workload) resourcesOn(id string) []string {
	var out []string
	for j := 1; j <= wl.w.Resources; j++ {
		r := wl.resourceName(j)
		if slices.Contains(wl.c.Members(wl.c.GroupOf(r)), id) {
			out = append(out, r)
		}
	}
	return out
}

// rushOne acquires resource through node id alone and releases what it
// gets at once.
func (wl *workload) rushOne(ctx context.Context, cl *client, id, resource string, opts lockclient.AcquireOptions, random *rand.Rand) {
	httpClient := &http.Client{Transport: &recordingTransport{inner: wl.c.Transport(cl.name), rec: wl.rec, gate: cl.gate}}
	c, err := newAPIClient(cl.name, httpClient, []string{wl.c.URL(id)}, random, false)
	if err != nil {
		return
	}
	lease, err := wl.acquireWith(ctx, c, resource, opts, 0)
	if err != nil {
		return
	}
	wl.release(ctx, lease)
}
