package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/models"
)

// Workload describes what the simulated clients do. Ranges are [min, max].
type Workload struct {
	Clients     int      `json:"clients"`
	Resources   int      `json:"resources"`
	TTLMs       [2]int64 `json:"ttl_ms"`
	HoldMs      [2]int64 `json:"hold_ms"`
	ThinkMs     [2]int64 `json:"think_ms"`
	WaitMs      [2]int64 `json:"wait_ms"`
	WaitProb    float64  `json:"wait_prob"`
	SharedProb  float64  `json:"shared_prob"`
	RenewProb   float64  `json:"renew_prob"`
	StatusProb  float64  `json:"status_prob"`
	AbandonProb float64  `json:"abandon_prob"`
	// Policy is "fifo" (default) or "throughput".
	Policy string `json:"policy,omitempty"`
	// PreferNode makes every client talk to this node first (the
	// gateway), failing over to the others on errors.
	PreferNode string `json:"prefer_node,omitempty"`
}

// workload runs the clients of one scenario run.
type workload struct {
	w       Workload
	c       *Cluster
	rec     *recorder
	policy  lock.Policy
	clients []*client
}

type client struct {
	idx  int
	name string
	rng  *rand.Rand
	lane int

	mu          sync.Mutex
	pausedUntil time.Time
}

func newWorkload(w Workload, c *Cluster, rec *recorder, seed uint64) (*workload, error) {
	policy, err := lock.ParsePolicy(w.Policy)
	if err != nil {
		return nil, err
	}
	wl := &workload{w: w, c: c, rec: rec, policy: policy}
	seeds := rand.New(rand.NewPCG(seed, 11))
	for i := 0; i < w.Clients; i++ {
		wl.clients = append(wl.clients, &client{
			idx: i, name: fmt.Sprintf("c%d", i+1),
			rng:  rand.New(rand.NewPCG(seeds.Uint64(), seeds.Uint64())),
			lane: rec.newLane(),
		})
	}
	return wl, nil
}

func (wl *workload) size() int { return len(wl.clients) }

// pause freezes client i (a GC pause in the client process) for d.
func (wl *workload) pause(i int, d time.Duration) {
	if i < 0 || i >= len(wl.clients) {
		return
	}
	cl := wl.clients[i]
	cl.mu.Lock()
	cl.pausedUntil = time.Now().Add(d)
	cl.mu.Unlock()
}

func (cl *client) pausedFor() time.Duration {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return time.Until(cl.pausedUntil)
}

// run drives every client until ctx ends.
func (wl *workload) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, cl := range wl.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wl.loop(ctx, cl)
		}()
	}
	wg.Wait()
}

func between(rng *rand.Rand, r [2]int64) time.Duration {
	lo, hi := r[0], r[1]
	if hi <= lo {
		return time.Duration(lo) * time.Millisecond
	}
	return time.Duration(lo+rng.Int64N(hi-lo+1)) * time.Millisecond
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// loop is one client: acquire, hold (writing to the fenced store, renewing),
// release, think — bounded by ctx.
func (wl *workload) loop(ctx context.Context, cl *client) {
	for ctx.Err() == nil {
		if d := cl.pausedFor(); d > 0 {
			sleepCtx(ctx, d)
			continue
		}
		resource := fmt.Sprintf("r%d", cl.rng.IntN(max(1, wl.w.Resources))+1)
		if cl.rng.Float64() < wl.w.StatusProb {
			wl.status(ctx, cl, resource)
			continue
		}
		wl.cycle(ctx, cl, resource)
		sleepCtx(ctx, between(cl.rng, wl.w.ThinkMs))
	}
}

// target picks the node a request goes to: the preferred gateway when up,
// else a random member of the resource's group.
func (wl *workload) target(cl *client, resource string, attempt int) string {
	g := wl.c.groupOf(resource)
	if wl.w.PreferNode != "" && attempt == 0 {
		if m := wl.c.byID[wl.w.PreferNode]; m != nil && m.group == g {
			return m.id
		}
	}
	members := wl.c.groups[g]
	return members[cl.rng.IntN(len(members))].id
}

func (wl *workload) status(ctx context.Context, cl *client, resource string) {
	in := models.LockInput{Op: models.Status, Resource: resource}
	wl.call(ctx, cl, in, func(ctx context.Context, id string) (lock.Result, error) {
		n := wl.c.node(id)
		if n == nil {
			return lock.Result{}, errDown
		}
		return n.Status(ctx, resource)
	})
}

func (wl *workload) cycle(ctx context.Context, cl *client, resource string) {
	mode := lock.Exclusive
	if cl.rng.Float64() < wl.w.SharedProb {
		mode = lock.Shared
	}
	var waitMs int64
	if cl.rng.Float64() < wl.w.WaitProb {
		waitMs = between(cl.rng, wl.w.WaitMs).Milliseconds()
	}
	ttl := between(cl.rng, wl.w.TTLMs)
	in := models.LockInput{
		Op: models.Acquire, Resource: resource, ClientID: cl.name, Mode: mode.String(),
		TTL: int64(ttl), Wait: waitMs > 0,
	}
	sent := time.Now()
	out, ok := wl.call(ctx, cl, in, func(ctx context.Context, id string) (lock.Result, error) {
		n := wl.c.node(id)
		if n == nil {
			return lock.Result{}, errDown
		}
		return n.Acquire(ctx, lock.Command{
			Resource: resource, ClientID: cl.name, Mode: mode, Policy: wl.policy,
			TTLMs: ttl.Milliseconds(), WaitMs: waitMs,
		})
	})
	if !ok || !out.Granted {
		return
	}
	l := &held{resource: resource, id: out.LeaseID, token: out.Token, mode: mode,
		validUntil: sent.Add(time.Duration(out.ExpiresAt-out.LogTime) - safetyMargin(ttl))}
	if mode == lock.Exclusive {
		wl.rec.fenced.RecordGrantReturned(resource, cl.name, l.id, l.token)
	}
	wl.hold(ctx, cl, l, ttl)
}

// held is a lease as the client sees it.
type held struct {
	resource   string
	id         string
	token      uint64
	mode       lock.Mode
	validUntil time.Time
}

// safetyMargin is how much earlier than the server the client gives up a
// lease: clock rate error between client and leader is bounded by it.
func safetyMargin(ttl time.Duration) time.Duration { return ttl / 5 }

// hold uses the lease: writes (exclusive holders only, each after checking
// validity), renews, then releases — unless the client abandons it (a
// crashed client) or is paused past its TTL (then it writes once with its
// stale token without checking, as a process resuming from a GC pause would).
func (wl *workload) hold(ctx context.Context, cl *client, l *held, ttl time.Duration) {
	if cl.rng.Float64() < wl.w.AbandonProb {
		return
	}
	for steps := 0; steps < 8 && ctx.Err() == nil; steps++ {
		if d := cl.pausedFor(); d > 0 {
			sleepCtx(ctx, d)
			if l.mode == lock.Exclusive {
				wl.rec.fenced.Write(l.resource, cl.name, l.id, l.token, false)
			}
			return
		}
		if !time.Now().Before(l.validUntil) {
			return // lost: never release what may be someone else's now
		}
		if l.mode == lock.Exclusive {
			wl.rec.fenced.Write(l.resource, cl.name, l.id, l.token, false)
		}
		if !sleepCtx(ctx, between(cl.rng, wl.w.HoldMs)) {
			return
		}
		if cl.rng.Float64() < wl.w.RenewProb {
			if !wl.renew(ctx, cl, l, ttl) {
				return
			}
		} else if cl.rng.IntN(3) == 0 {
			break
		}
	}
	if ctx.Err() != nil {
		return
	}
	wl.release(ctx, cl, l)
}

func (wl *workload) renew(ctx context.Context, cl *client, l *held, ttl time.Duration) bool {
	id, err := lock.ParseLeaseID(l.id)
	if err != nil {
		return false
	}
	in := models.LockInput{Op: models.Renew, Resource: l.resource, ClientID: cl.name, LeaseID: l.id, TTL: int64(ttl)}
	sent := time.Now()
	out, ok := wl.call(ctx, cl, in, func(ctx context.Context, nid string) (lock.Result, error) {
		n := wl.c.node(nid)
		if n == nil {
			return lock.Result{}, errDown
		}
		return n.Renew(ctx, l.resource, id, ttl.Milliseconds())
	})
	if !ok || out.Code != "" {
		return false
	}
	if v := sent.Add(time.Duration(out.ExpiresAt-out.LogTime) - safetyMargin(ttl)); v.After(l.validUntil) {
		l.validUntil = v
	}
	return true
}

func (wl *workload) release(ctx context.Context, cl *client, l *held) {
	id, err := lock.ParseLeaseID(l.id)
	if err != nil {
		return
	}
	in := models.LockInput{Op: models.Release, Resource: l.resource, ClientID: cl.name, LeaseID: l.id}
	wl.call(ctx, cl, in, func(ctx context.Context, nid string) (lock.Result, error) {
		n := wl.c.node(nid)
		if n == nil {
			return lock.Result{}, errDown
		}
		return n.Release(ctx, l.resource, id)
	})
}

// errDown is a client's connection refused by a crashed node: definite.
var errDown = fmt.Errorf("node is down")

// call performs one recorded operation with a deadline, failing over once
// to another node when the first is down. A definite outcome keeps the
// client's Porcupine lane; an unknown one moves it to a fresh lane.
func (wl *workload) call(ctx context.Context, cl *client, in models.LockInput,
	do func(context.Context, string) (lock.Result, error)) (models.LockOutput, bool) {
	call := wl.rec.now()
	var res lock.Result
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		octx, cancel := context.WithTimeout(ctx, opTimeout+time.Duration(boolInt(in.Wait))*10*time.Second)
		res, err = do(octx, wl.target(cl, in.Resource, attempt))
		cancel()
		if err != errDown {
			break
		}
	}
	if err == errDown {
		return models.LockOutput{}, false // never reached a node: nothing to record
	}
	out := outcome(res, err)
	op := checker.Op{ClientID: cl.lane, Input: in, Output: out, Call: call, Return: wl.rec.now()}
	if out.Unknown {
		op.Return = never
		cl.lane = wl.rec.newLane()
	}
	wl.rec.op(op)
	return out, !out.Unknown
}

// opTimeout bounds one client operation (plus any queue wait).
const opTimeout = 3 * time.Second

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
