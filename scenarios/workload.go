package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lockstep/lockstep/core/ctxtime"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/api"
	lockclient "github.com/lockstep/lockstep/core/client"
	"github.com/lockstep/lockstep/core/lock"
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
	// KeepAliveProb is the share of leases the client library keeps alive
	// itself (renewing at TTL/2) instead of the workload renewing.
	KeepAliveProb float64 `json:"keep_alive_prob,omitempty"`
	// SharedIDProb is the share of acquires that carry a request id from a
	// small pool shared by all clients instead of a fresh one.
	SharedIDProb float64 `json:"shared_id_prob,omitempty"`
	// RetryProb is the chance that an acquire whose outcome is unknown is
	// asked again with the same request id.
	RetryProb float64 `json:"retry_prob,omitempty"`
	// AcquireOnce gives an acquire only the time of one attempt: a client
	// whose request's node dies gives up instead of retrying elsewhere
	// (releases and renews still retry), leaving its queued request behind.
	AcquireOnce bool `json:"acquire_once,omitempty"`
	// CancelWaitProb is the chance that a waiting acquire is abandoned part
	// way through its wait (the caller gives up, as a user pressing Ctrl-C
	// would); RetryProb then decides whether it asks again under its id.
	CancelWaitProb float64 `json:"cancel_wait_prob,omitempty"`
	// ManyProb is the share of acquires that are acquire_many over 2-4
	// resources sharing a hash tag. When set, every resource name carries
	// a tag ("{g1}:r1"), so single acquires meet multi requests.
	ManyProb float64 `json:"many_prob,omitempty"`
	// CounterIDs names each request by the client's plain counter ("1",
	// "2", ...), as many applications number their requests, instead of
	// "<client>-<n>": ids then repeat across clients, and only the client
	// id tells (c1, "23") from (c12, "3").
	CounterIDs bool `json:"counter_ids,omitempty"`
	// ReuseIDProb is the share of acquires that send one of the client's
	// earlier request ids again: half of them with the same request (a
	// late duplicate, which must get the first answer again), half with
	// one field changed (mode or TTL, or the resource: one on the same
	// shard is a misuse, which must be refused as request_id_reused and
	// change nothing; one on another shard is a separate request there).
	ReuseIDProb float64 `json:"reuse_id_prob,omitempty"`
	// ExtendWaitProb is the share of waiting acquires whose caller asks
	// again under the same request id with a longer wait while the first
	// call still waits (see extendWait).
	ExtendWaitProb float64 `json:"extend_wait_prob,omitempty"`
	// RestartRushProb is the chance that a client, when a node restarts,
	// sends that node one waiting acquire at once (see rushRestarted).
	RestartRushProb float64 `json:"restart_rush_prob,omitempty"`
	// ValidateProb is the chance, at each step of a hold and after each
	// release, that the client asks whether its token is valid (the one
	// it holds, or the one it just released), as a downstream service
	// would: at a random member, without leader routing, so a member that
	// lags the leader answers too.
	ValidateProb float64 `json:"validate_prob,omitempty"`
	// Permits, when set, makes every resource a counting semaphore: r1
	// of Permits[0] permits, r2 of one more, and so on up to Permits[1],
	// then again (see permitsOf). Every acquire of a resource names its
	// N, in exclusive mode.
	Permits [2]int `json:"permits,omitempty"`
	// DeadlockRings, when set, replaces every client's loop with rings
	// that build wait-for cycles and chains on purpose (rings.go).
	DeadlockRings *DeadlockRings `json:"deadlock_rings,omitempty"`
	// GraceProb is the share of acquires that ask for a grace window of
	// GraceMs (at most their TTL): past its expiry the lease keeps the
	// resource that long, and a renew in it revives the lease. A client
	// that resumes from a pause with such a lease renews it first and
	// holds on if it was revived.
	GraceProb float64  `json:"grace_prob,omitempty"`
	GraceMs   [2]int64 `json:"grace_ms,omitempty"`
}

// workload runs the clients of one scenario run. Every client is the real
// Go client library (core/client) over HTTP on the simulated network, so
// its retries (same request id), keep-alive and validity rules run under
// every fault, and every request it sends is recorded (recordingTransport).
type workload struct {
	w       Workload
	c       Target
	rec     *recorder
	policy  api.Policy
	clients []*client
	rush    *restartRush
	// seed is the workload seed; started is when run began (the rings'
	// rounds count from it).
	seed    uint64
	started time.Time
}

type client struct {
	idx  int
	name string
	rng  *rand.Rand
	// api holds one Go client per Raft group (a resource's group serves
	// it), each with that group's nodes as endpoints.
	api []*lockclient.Client
	// validators hold one Go client per group for validates (ValidateProb):
	// shard routing off, a random member first.
	validators []*lockclient.Client
	gate       *pauseGate
	// http is the client's recorded HTTP stack, for the requests it sends
	// without the Go client (staleRenew).
	http *http.Client
	// requests numbers the client's own request ids.
	requests int
	// sent are the client's latest acquires (ReuseIDProb draws from them).
	sent []sentAcquire
}

// sentAcquire is one acquire a client sent: what ReuseIDProb sends again.
type sentAcquire struct {
	resource string
	opts     lockclient.AcquireOptions
}

// reusedIDs is how many of its latest acquires a client may send again.
const reusedIDs = 8

// Go client settings for the simulator: attempts short enough that a
// partitioned node costs little, retries spread by seeded jitter.
const (
	clientAttemptTimeout = 2 * time.Second
	clientMaxAttempts    = 4
	clientBackoffBase    = 20 * time.Millisecond
	clientBackoffMax     = 400 * time.Millisecond
	// apiPort is the port of a simulated node's public HTTP API; plain
	// node ids (no port) reach its member port.
	apiPort = "7070"
)

func newWorkload(w Workload, c Target, rec *recorder, seed uint64) (*workload, error) {
	policy := api.Policy(w.Policy)
	if _, err := lock.ParsePolicy(w.Policy); err != nil {
		return nil, err
	}
	wl := &workload{w: w, c: c, rec: rec, policy: policy, rush: newRestartRush(seed), seed: seed}
	seeds := rand.New(rand.NewPCG(seed, 11))
	for i := 0; i < w.Clients; i++ {
		cl := &client{
			idx: i, name: fmt.Sprintf("c%d", i+1),
			rng:  rand.New(rand.NewPCG(seeds.Uint64(), seeds.Uint64())),
			gate: &pauseGate{},
		}
		httpClient := &http.Client{Transport: &recordingTransport{
			inner: c.Transport(cl.name), rec: rec, gate: cl.gate,
		}}
		cl.http = httpClient
		random := rand.New(rand.NewPCG(seeds.Uint64(), seeds.Uint64()))
		if gw, ok := c.(Gatewayed); ok && gw.GatewayURL() != "" {
			// One client for every group: the gateway routes, so the
			// client's own shard routing (which would reach members) is off.
			// One client for every group: the gateway routes, so the
			// client's own shard routing (which would reach members) is off.
			api, err := newAPIClient(cl.name, httpClient, []string{gw.GatewayURL()}, random, true)
			if err != nil {
				return nil, err
			}
			for range c.GroupCount() {
				cl.api = append(cl.api, api)
			}
			wl.clients = append(wl.clients, cl)
			continue
		}
		for g := range c.GroupCount() {
			api, err := newAPIClient(cl.name, httpClient, wl.endpoints(cl, g), random, false)
			if err != nil {
				return nil, err
			}
			cl.api = append(cl.api, api)
		}
		// Drawn only when validates are on, so other scenarios keep their
		// seeded schedules.
		for g := range c.GroupCount() {
			if w.ValidateProb == 0 {
				break
			}
			random := rand.New(rand.NewPCG(cl.rng.Uint64(), cl.rng.Uint64()))
			v, err := newAPIClient(cl.name, httpClient, wl.endpoints(cl, g), random, true)
			if err != nil {
				return nil, err
			}
			cl.validators = append(cl.validators, v)
		}
		wl.clients = append(wl.clients, cl)
	}
	return wl, nil
}

// newAPIClient is the Go client a simulated client uses on endpoints.
func newAPIClient(name string, httpClient *http.Client, endpoints []string, random *rand.Rand, noRouting bool) (*lockclient.Client, error) {
	return lockclient.New(lockclient.Config{
		Endpoints: endpoints, ClientID: name, HTTPClient: httpClient,
		AttemptTimeout: clientAttemptTimeout, MaxAttempts: clientMaxAttempts,
		BackoffBase: clientBackoffBase, BackoffMax: clientBackoffMax, Rand: random,
		DisableShardRouting: noRouting,
	})
}

// endpoints lists the API of every node of group g a client may use: all
// its members (a follower forwards to the leader), the preferred gateway
// first, the rest in a per-client order.
func (wl *workload) endpoints(cl *client, g int) []string {
	ids := slices.Clone(wl.c.Members(g))
	cl.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	if p := wl.w.PreferNode; p != "" {
		if i := slices.Index(ids, p); i > 0 {
			ids[0], ids[i] = ids[i], ids[0]
		}
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = wl.c.URL(id)
	}
	return out
}

func (wl *workload) size() int { return len(wl.clients) }

// pause freezes client i (a GC pause in the client process) for d: its
// requests, keep-alive included, wait until it resumes.
func (wl *workload) pause(i int, d time.Duration) {
	if i >= 0 && i < len(wl.clients) {
		wl.clients[i].gate.pause(d)
	}
}

// run drives every client until ctx ends.
func (wl *workload) run(ctx context.Context) {
	wl.rush.open(ctx)
	defer wl.rush.close()
	wl.started = time.Now()
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

// loop is one client: acquire, hold (writing to the fenced store, renewing),
// release, think — bounded by ctx.
func (wl *workload) loop(ctx context.Context, cl *client) {
	if wl.w.DeadlockRings != nil {
		wl.ringLoop(ctx, cl)
		return
	}
	for ctx.Err() == nil {
		if d := cl.gate.left(); d > 0 {
			_ = ctxtime.Sleep(ctx, d)
			continue
		}
		i := cl.rng.IntN(max(1, wl.w.Resources)) + 1
		resource := wl.resourceName(i)
		if cl.rng.Float64() < wl.w.StatusProb {
			wl.status(ctx, cl, resource)
			continue
		}
		// Drawn only when multi requests are on, so other scenarios keep
		// their seeded schedules.
		if wl.w.ManyProb > 0 && cl.rng.Float64() < wl.w.ManyProb {
			wl.cycleMany(ctx, cl, wl.manyResources(cl, i))
		} else {
			wl.cycle(ctx, cl, resource)
		}
		_ = ctxtime.Sleep(ctx, between(cl.rng, wl.w.ThinkMs))
	}
}

func (wl *workload) status(ctx context.Context, cl *client, resource string) {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, _ = cl.apiFor(wl.c, resource).Status(cctx, resource)
}

// cycle acquires resource and, when granted, holds and releases it. The
// workload names each request (the library retries it under that id);
// now and then the id comes from a small pool shared by every client (ids
// of different clients must never meet, and a client reusing one for
// another request is refused), and a request whose outcome stayed unknown
// is asked again under its id, as an application that lost the answer would.
func (wl *workload) cycle(ctx context.Context, cl *client, resource string) {
	opts, giveUp := wl.plan(cl)
	if n := wl.permitsOf(resource); n > 1 {
		opts.Permits, opts.Mode = n, api.Exclusive
	}
	// Drawn only when reuse is on, so other scenarios keep their seeded
	// schedules.
	if wl.w.ReuseIDProb > 0 && len(cl.sent) > 0 && cl.rng.Float64() < wl.w.ReuseIDProb {
		resource, opts, giveUp = wl.reuse(cl)
	} else if wl.w.ReuseIDProb > 0 {
		cl.sent = append(cl.sent, sentAcquire{resource: resource, opts: opts})
		if len(cl.sent) > reusedIDs {
			cl.sent = cl.sent[1:]
		}
	}
	sent := time.Now()
	var lease *lockclient.Lease
	var err error
	// Drawn only when extending is on, so other scenarios keep their
	// seeded schedules.
	if wl.w.ExtendWaitProb > 0 && opts.Wait > 0 && giveUp == 0 && cl.rng.Float64() < wl.w.ExtendWaitProb {
		opts.KeepAlive = false
		lease, err = wl.extendWait(ctx, cl, resource, opts)
	} else {
		lease, err = wl.acquire(ctx, cl, resource, opts, giveUp)
	}
	if err != nil && retryable(err) && cl.rng.Float64() < wl.w.RetryProb {
		// The answer was lost: ask again for the same request.
		opts.Wait = max(0, opts.Wait-time.Since(sent))
		lease, err = wl.acquire(ctx, cl, resource, opts, 0)
	}
	if err != nil {
		return
	}
	if wl.fenced(resource, opts.Mode) {
		wl.rec.fenced.RecordGrantReturned(resource, cl.name, lease.ID(), lease.Token())
	}
	wl.hold(ctx, cl, []*lockclient.Lease{lease}, opts)
}

// plan draws one acquire's options and when its caller gives up (0: never).
func (wl *workload) plan(cl *client) (lockclient.AcquireOptions, time.Duration) {
	mode := api.Exclusive
	if cl.rng.Float64() < wl.w.SharedProb {
		mode = api.Shared
	}
	var wait time.Duration
	if cl.rng.Float64() < wl.w.WaitProb {
		wait = between(cl.rng, wl.w.WaitMs)
	}
	opts := lockclient.AcquireOptions{
		TTL: between(cl.rng, wl.w.TTLMs), Mode: mode, Wait: wait, Policy: wl.policy,
		KeepAlive: cl.rng.Float64() < wl.w.KeepAliveProb,
	}
	cl.requests++
	opts.RequestID = fmt.Sprintf("%s-%d", cl.name, cl.requests)
	if wl.w.CounterIDs {
		opts.RequestID = fmt.Sprint(cl.requests)
	}
	if cl.rng.Float64() < wl.w.SharedIDProb {
		opts.RequestID = fmt.Sprintf("shared-%d", cl.rng.IntN(sharedRequestIDs))
	}
	// Drawn only when grace is on, so other scenarios keep their seeded
	// schedules.
	if wl.w.GraceProb > 0 && cl.rng.Float64() < wl.w.GraceProb {
		opts.Grace = min(between(cl.rng, wl.w.GraceMs), opts.TTL)
	}
	var giveUp time.Duration
	if wait > 0 && cl.rng.Float64() < wl.w.CancelWaitProb {
		giveUp = time.Duration(cl.rng.Int64N(int64(wait)))
	}
	return opts, giveUp
}

// reuse picks one of cl's earlier acquires to send again under its request
// id: unchanged (a late duplicate) or with one field changed (a misuse the
// server must refuse). The wait is kept short: a duplicate answers at once
// unless its request still waits, and then it joins that wait.
func (wl *workload) reuse(cl *client) (string, lockclient.AcquireOptions, time.Duration) {
	old := cl.sent[cl.rng.IntN(len(cl.sent))]
	resource, opts := old.resource, old.opts
	opts.KeepAlive = false
	opts.Wait = min(opts.Wait, 500*time.Millisecond)
	if cl.rng.IntN(2) == 0 {
		return resource, opts, 0
	}
	// Another resource: on the same shard, where the id names the first
	// request and the server must refuse this one as reused; or, with
	// several shards, on another, where it is a separate request (ids are
	// deduplicated per shard, README Semantics). The checker judges both
	// by the resources' shards (checker.Options.Shards).
	var same, other []string
	for j := 1; j <= wl.w.Resources; j++ {
		switch r := wl.resourceName(j); {
		case r == resource:
		case wl.c.GroupOf(r) == wl.c.GroupOf(resource):
			same = append(same, r)
		default:
			other = append(other, r)
		}
	}
	switch n := cl.rng.IntN(3); {
	case n == 0 && len(same)+len(other) > 0:
		// Drawn only with several shards, so one-group scenarios keep
		// their seeded schedules.
		pool := same
		if len(other) > 0 && (len(same) == 0 || cl.rng.IntN(2) == 0) {
			pool = other
		}
		resource = pool[cl.rng.IntN(len(pool))]
	case n <= 1:
		opts.Mode = api.Shared
		if old.opts.Mode == api.Shared {
			opts.Mode = api.Exclusive
		}
	default:
		opts.TTL += time.Millisecond
	}
	return resource, opts, 0
}

// sharedRequestIDs is the size of the pool of workload-chosen request ids.
const sharedRequestIDs = 4

// acquire asks for resource; giveUp > 0 abandons the call after that long.
func (wl *workload) acquire(ctx context.Context, cl *client, resource string, opts lockclient.AcquireOptions, giveUp time.Duration) (*lockclient.Lease, error) {
	return wl.acquireWith(ctx, cl.apiFor(wl.c, resource), resource, opts, giveUp)
}

// acquireWith is acquire through the Go client api, under the request id
// the workload chose (withWireRequestID).
func (wl *workload) acquireWith(ctx context.Context, api *lockclient.Client, resource string, opts lockclient.AcquireOptions, giveUp time.Duration) (*lockclient.Lease, error) {
	cctx, cancel := context.WithTimeout(withWireRequestID(ctx, opts.RequestID), wl.callLimit(opts, giveUp))
	defer cancel()
	return api.Acquire(cctx, resource, opts)
}

// callLimit is how long one acquire call may take: a call and its wait,
// or one attempt and its wait (AcquireOnce), or until its caller gives up.
func (wl *workload) callLimit(opts lockclient.AcquireOptions, giveUp time.Duration) time.Duration {
	switch {
	case giveUp > 0:
		return giveUp
	case wl.w.AcquireOnce:
		return clientAttemptTimeout + opts.Wait
	}
	return opTimeout + opts.Wait
}

// apiFor is the client of resource's group.
func (cl *client) apiFor(c Target, resource string) *lockclient.Client {
	return cl.api[c.GroupOf(resource)]
}

// hold uses the leases of one acquire: writes (exclusive holders only,
// each after checking validity), renews (explicitly, or through
// keep-alive), then releases — unless the client abandons them (a crashed
// client: it never renews or releases again) or is paused past its TTL
// (then it writes once with its stale tokens without checking, as a
// process resuming from a GC pause would). A lease found lost is never
// released (it may be someone else's now); the others still are.
func (wl *workload) hold(ctx context.Context, cl *client, leases []*lockclient.Lease, opts lockclient.AcquireOptions) {
	if !opts.KeepAlive && cl.rng.Float64() < wl.w.AbandonProb {
		return
	}
	for steps := 0; steps < 8 && ctx.Err() == nil; steps++ {
		if d := cl.gate.left(); d > 0 {
			_ = ctxtime.Sleep(ctx, d)
			if opts.Grace > 0 {
				if wl.revive(ctx, leases, opts) {
					continue
				}
				for _, l := range leases {
					wl.staleRenew(ctx, cl, l)
				}
			}
			for _, l := range leases {
				if wl.fenced(l.Resource(), l.Mode()) {
					wl.rec.fenced.Write(l.Resource(), cl.name, l.ID(), l.Token(), false)
				}
				wl.release(ctx, l)
			}
			return
		}
		if slices.ContainsFunc(leases, func(l *lockclient.Lease) bool { return !l.Valid() }) {
			// Past its validity a lease with a grace window may yet be
			// revived: nobody else can hold it meanwhile.
			if opts.Grace > 0 && wl.revive(ctx, leases, opts) {
				continue
			}
			wl.releaseValid(ctx, leases)
			return
		}
		for _, l := range leases {
			if wl.fenced(l.Resource(), l.Mode()) {
				wl.rec.fenced.Write(l.Resource(), cl.name, l.ID(), l.Token(), false)
			}
		}
		wl.maybeValidate(ctx, cl, leases)
		if ctxtime.Sleep(ctx, between(cl.rng, wl.w.HoldMs)) != nil {
			break
		}
		if !opts.KeepAlive && cl.rng.Float64() < wl.w.RenewProb {
			lost := false
			for _, l := range leases {
				cctx, cancel := context.WithTimeout(ctx, opTimeout)
				err := l.Renew(cctx, opts.TTL)
				cancel()
				lost = lost || errors.Is(err, lockclient.ErrNotHolder)
			}
			if lost {
				wl.releaseValid(ctx, leases)
				return
			}
		} else if cl.rng.IntN(3) == 0 {
			break
		}
	}
	// Released even when the run ends, which also stops a keep-alive that
	// would otherwise outlive the run.
	for _, l := range leases {
		wl.release(ctx, l)
	}
	wl.maybeValidate(ctx, cl, leases)
}

// revive renews leases with a grace window after a pause, as a client
// that knows its lease may wait in its window would, and reports whether
// every one is valid again (renewed in time, or revived in the window).
// A lease lost for good is not renewed: the Go client knows it is over.
// A kept-alive lease is left to its keep-alive (a renew of its own would
// wait for the keep-alive's), given a moment to do it.
func (wl *workload) revive(ctx context.Context, leases []*lockclient.Lease, opts lockclient.AcquireOptions) bool {
	if opts.KeepAlive {
		_ = ctxtime.Sleep(ctx, reviveWait)
		return !slices.ContainsFunc(leases, func(l *lockclient.Lease) bool { return !l.Valid() })
	}
	all := true
	for _, l := range leases {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		err := l.Renew(cctx, opts.TTL)
		cancel()
		all = all && err == nil && l.Valid()
	}
	return all
}

// staleRenew sends a renew of l without the Go client's validity check,
// as a process resuming from a pause that keeps no clock of its own
// would: past the lease's grace window the server must answer not_holder,
// whoever holds the lock by then.
func (wl *workload) staleRenew(ctx context.Context, cl *client, l *lockclient.Lease) {
	body, err := json.Marshal(api.RenewRequest{Resource: l.Resource(), LeaseID: l.ID()})
	if err != nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, clientAttemptTimeout)
	defer cancel()
	url := wl.c.URL(wl.c.Members(wl.c.GroupOf(l.Resource()))[0]) + api.PathRenew
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	if resp, err := cl.http.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

// maybeValidate asks, with ValidateProb, whether the token of one of
// leases is valid; the recorder keeps the answer for the checker. Drawn
// only when validates are on, so other scenarios keep their seeded
// schedules.
func (wl *workload) maybeValidate(ctx context.Context, cl *client, leases []*lockclient.Lease) {
	if len(cl.validators) == 0 || len(leases) == 0 || cl.rng.Float64() >= wl.w.ValidateProb {
		return
	}
	l := leases[cl.rng.IntN(len(leases))]
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	_, _ = cl.validators[wl.c.GroupOf(l.Resource())].Validate(cctx, l.Resource(), l.Token())
}

// releaseValid releases the leases that are still valid.
func (wl *workload) releaseValid(ctx context.Context, leases []*lockclient.Lease) {
	for _, l := range leases {
		if l.Valid() {
			wl.release(ctx, l)
		}
	}
}

func (wl *workload) release(ctx context.Context, l *lockclient.Lease) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	_ = l.Release(cctx)
}

// retryable tells whether an acquire failed with its outcome unknown.
func retryable(err error) bool {
	var apiErr *lockclient.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Status >= 500
	}
	return !errors.Is(err, lockclient.ErrNotGranted)
}

// reviveWait is how long a client resuming with kept-alive leases in
// their grace window gives the keep-alive to revive them.
const reviveWait = 50 * time.Millisecond

// opTimeout bounds one client call (plus any queue wait).
const opTimeout = 8 * time.Second
