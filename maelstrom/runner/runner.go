// Package runner does Maelstrom's job where the Maelstrom tool (a JVM
// program) is not available: it spawns any Maelstrom node binary N times,
// sends init, routes every message between nodes and clients with a seeded
// latency, partitions the nodes on a schedule, drives client operations
// at a rate with a concurrency, records the history by Maelstrom's
// definite/indefinite rules, and checks it: lin-kv with Porcupine and the
// register model, the lock workload with the lock model and the fencing
// checks (models/, checker/).
//
// The seed fixes the runner's choices (operations, target nodes, latencies,
// partitions), not the processes' scheduling: a replay with the same seed
// runs the same plan, and the saved history re-checks exactly.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/lockstep/lockstep/maelstrom"
)

// Workloads.
const (
	WorkloadLinKV = "lin-kv"
	WorkloadLock  = "lock"
)

// Options describes one run. Flag names of cmd/maelstrom-run mirror
// Maelstrom's.
type Options struct {
	Workload  string
	Bin       string
	BinArgs   []string
	NodeCount int
	TimeLimit time.Duration
	// Rate is the total operations per second across clients.
	Rate float64
	// Concurrency is the number of logical clients.
	Concurrency int
	// Latency is the mean one-way message delay, LatencyDist its shape.
	Latency     time.Duration
	LatencyDist string
	// Nemesis lists faults; only "partition" exists, as in Maelstrom.
	Nemesis []string
	// NemesisInterval is the mean length of each healthy and each
	// partitioned phase.
	NemesisInterval time.Duration
	// Recovery is the quiet period at the end: faults heal at TimeLimit -
	// Recovery and clients keep going until TimeLimit.
	Recovery time.Duration
	// OpTimeout is how long a client waits for a reply (plus an acquire's
	// wait) before recording the operation as info.
	OpTimeout time.Duration
	Seed      int64
	// Keys is the number of lin-kv keys or lock resources.
	Keys int
	// Dir receives history.json, verdict.json, history.html, COMMAND.txt.
	Dir string
	// LogDir receives each node's stderr.
	LogDir string
	// Command is the replay command line, saved in COMMAND.txt.
	Command string
	// CheckTimeout bounds the Porcupine search.
	CheckTimeout time.Duration
	Logger       *slog.Logger
}

// ErrHarness marks a run that could not be carried out (a node did not
// start, answer init, or stay up); it says nothing about correctness.
var ErrHarness = errors.New("harness error")

// initTimeout bounds the wait for every node's init_ok.
const initTimeout = 10 * time.Second

func (o *Options) validate() error {
	switch {
	case o.Workload != WorkloadLinKV && o.Workload != WorkloadLock:
		return fmt.Errorf("unknown workload %q (want lin-kv or lock)", o.Workload)
	case o.Bin == "":
		return errors.New("--bin is required")
	case o.NodeCount < 1 || o.NodeCount > 64:
		return errors.New("--node-count must be in 1..64")
	case o.TimeLimit <= 0 || o.Rate <= 0 || o.Concurrency < 1:
		return errors.New("--time-limit, --rate and --concurrency must be positive")
	case o.Keys < 1:
		return errors.New("keys must be positive")
	case o.OpTimeout <= 0 || o.CheckTimeout <= 0:
		return errors.New("op and check timeouts must be positive")
	case o.Dir == "" || o.LogDir == "":
		return errors.New("result and log directories are required")
	}
	for _, n := range o.Nemesis {
		if n != "partition" {
			return fmt.Errorf("unknown nemesis %q (want partition)", n)
		}
	}
	return nil
}

// run is the state of one run.
type run struct {
	opts  Options
	log   *slog.Logger
	start time.Time
	net   *network
	board *switchboard
	procs map[string]*process
	nodes []string

	mu      sync.Mutex
	ops     []Op
	faults  []Fault
	process int // next Porcupine lane
}

func (r *run) now() int64 { return int64(time.Since(r.start)) }

// Run carries out one run and checks it. It returns the verdict (also
// written to opts.Dir) and an error wrapping ErrHarness when the run could
// not be carried out.
func Run(ctx context.Context, opts Options) (*Verdict, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{opts.Dir, opts.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrHarness, err)
		}
	}
	r := &run{opts: opts, log: opts.Logger, board: newSwitchboard(), procs: make(map[string]*process)}
	for i := range opts.NodeCount {
		r.nodes = append(r.nodes, fmt.Sprintf("n%d", i))
	}
	seeds := rand.New(rand.NewSource(opts.Seed))
	netSeed, nemesisSeed, clientSeed := seeds.Int63(), seeds.Int63(), seeds.Int63()
	r.net = newNetwork(netSeed, opts.Latency, opts.LatencyDist, r.route)

	netCtx, stopNet := context.WithCancel(context.Background())
	var netDone sync.WaitGroup
	netDone.Add(1)
	go func() { defer netDone.Done(); r.net.run(netCtx) }()
	r.start = time.Now()
	harnessErr := r.execute(ctx, nemesisSeed, clientSeed)
	for _, p := range r.procs {
		p.stop(5 * time.Second)
	}
	stopNet()
	netDone.Wait()

	h := &History{Workload: opts.Workload, Seed: opts.Seed, Nodes: r.nodes, Ops: r.ops, Faults: r.faults, Network: r.net.snapshot()}
	if h.Faults == nil {
		h.Faults = []Fault{} // "faults": [] rather than null in history.json
	}
	v, err := Report(ctx, h, opts.Dir, opts.Command, opts.CheckTimeout)
	if harnessErr != nil {
		if v != nil {
			v.Notes = append(v.Notes, "harness: "+harnessErr.Error())
		}
		return v, fmt.Errorf("%w: %w", ErrHarness, harnessErr)
	}
	if err != nil {
		return v, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	return v, nil
}

// execute starts the nodes, runs the workload and the nemesis, and returns
// the harness failure, if any.
func (r *run) execute(ctx context.Context, nemesisSeed, clientSeed int64) error {
	for _, id := range r.nodes {
		p, err := startProcess(id, r.opts.Bin, r.opts.BinArgs, filepath.Join(r.opts.LogDir, id+".log"), r.log, r.net.send)
		if err != nil {
			return err
		}
		r.procs[id] = p
	}
	if err := r.init(ctx); err != nil {
		return err
	}
	r.log.Info("nodes initialized", "nodes", r.nodes)
	r.start = time.Now() // history times count from the first operation
	deadline := r.start.Add(r.opts.TimeLimit)
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	var wg sync.WaitGroup
	if slices.Contains(r.opts.Nemesis, "partition") {
		wg.Add(1)
		go func() { defer wg.Done(); r.partitions(runCtx, rand.New(rand.NewSource(nemesisSeed))) }()
	}
	tokens := make(chan struct{})
	wg.Add(1)
	go func() { defer wg.Done(); pace(runCtx, rand.New(rand.NewSource(clientSeed)), r.opts.Rate, tokens) }()
	gen := r.generator()
	clientSeeds := rand.New(rand.NewSource(clientSeed + 1))
	var clients sync.WaitGroup
	for i := range r.opts.Concurrency {
		st := &clientState{name: fmt.Sprintf("c%d", i+1), process: r.newProcess()}
		rng := rand.New(rand.NewSource(clientSeeds.Int63()))
		clients.Add(1)
		go func() { defer clients.Done(); r.client(ctx, runCtx, rng, st, gen, tokens) }()
	}
	clients.Wait()
	wg.Wait()
	for id, p := range r.procs {
		if early, err := p.exitedEarly(); early {
			return fmt.Errorf("node %s exited during the run: %v", id, err)
		}
	}
	return ctx.Err()
}

func (r *run) generator() generator {
	if r.opts.Workload == WorkloadLock {
		return lockGenerator{resources: r.opts.Keys}
	}
	return kvGenerator{keys: r.opts.Keys, values: 5}
}

// route delivers a message that has crossed the network.
func (r *run) route(m maelstrom.Message) bool {
	if p, ok := r.procs[m.Dest]; ok {
		return p.send(m)
	}
	if !isNode(m.Dest) {
		return r.board.deliver(m)
	}
	return false
}

// init sends init to every node and waits for every init_ok.
func (r *run) init(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	errs := make(chan error, len(r.nodes))
	for i, id := range r.nodes {
		go func() {
			// A node that exits fails init at once, not after the timeout.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() {
				select {
				case <-r.procs[id].exited:
					cancel()
				case <-ctx.Done():
				}
			}()
			body := map[string]any{"type": "init", "node_id": id, "node_ids": r.nodes}
			m, ok := r.call(ctx, "c0", id, i+1, body, initTimeout)
			switch {
			case !ok:
				errs <- fmt.Errorf("node %s did not answer init", id)
			case m.Type() != "init_ok":
				errs <- fmt.Errorf("node %s answered init with %s", id, m.Body)
			default:
				errs <- nil
			}
		}()
	}
	var all []error
	for range r.nodes {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// pace hands out one token per operation at rate per second in total,
// spaced uniformly in [0, 2/rate) like Jepsen's stagger, until ctx ends.
func pace(ctx context.Context, rng *rand.Rand, rate float64, tokens chan<- struct{}) {
	mean := float64(time.Second) / rate
	next := time.Now()
	for {
		next = next.Add(time.Duration(rng.Float64() * 2 * mean))
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		select {
		case tokens <- struct{}{}:
		case <-ctx.Done():
			return
		}
	}
}

func (r *run) newProcess() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.process
	r.process++
	return p
}

// client issues one operation per token until runCtx ends; the operation
// in flight then still completes (or times out) under ctx.
func (r *run) client(ctx, runCtx context.Context, rng *rand.Rand, st *clientState, gen generator, tokens <-chan struct{}) {
	for msgID := 1; ; msgID++ {
		select {
		case <-runCtx.Done():
			return
		case <-tokens:
		}
		req := gen.next(rng, st, time.Now())
		node := r.nodes[rng.Intn(len(r.nodes))]
		raw, _ := json.Marshal(req.body)
		op := Op{Process: st.process, Client: st.name, Node: node, F: req.f, Request: raw, Invoke: r.now()}
		m, replied := r.call(ctx, st.name, node, msgID, req.body, r.opts.OpTimeout+req.extra)
		op.Complete = r.now()
		op.Type, op.Code = classify(m, replied)
		if replied {
			op.Reply = m.Body
		}
		gen.observe(st, op, time.Now())
		r.record(&op)
		if op.Type == TypeInfo {
			st.process = r.newProcess()
		}
	}
}

func (r *run) record(op *Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Index = len(r.ops)
	r.ops = append(r.ops, *op)
}

// partitions alternates healthy and partitioned phases, each lasting a
// uniform [0.5, 1.5) times the interval, starting healthy so the cluster
// can form, and heals for good at TimeLimit - Recovery.
func (r *run) partitions(ctx context.Context, rng *rand.Rand) {
	stopAt := r.start.Add(r.opts.TimeLimit - r.opts.Recovery)
	phase := func() time.Duration {
		return time.Duration((0.5 + rng.Float64()) * float64(r.opts.NemesisInterval))
	}
	sleepUntil := func(t time.Time) bool {
		timer := time.NewTimer(time.Until(t))
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		}
	}
	for {
		cutAt := time.Now().Add(phase())
		if !cutAt.Before(stopAt) || !sleepUntil(cutAt) {
			return
		}
		sides := r.chooseSides(rng)
		r.net.partition(sides)
		f := Fault{Name: "partition", Start: r.now(), Target: describeSides(sides)}
		r.log.Info("partition", "sides", f.Target)
		healAt := time.Now().Add(phase())
		if healAt.After(stopAt) {
			healAt = stopAt
		}
		sleepUntil(healAt)
		r.net.heal()
		f.End = r.now()
		r.mu.Lock()
		r.faults = append(r.faults, f)
		r.mu.Unlock()
		r.log.Info("heal")
		if ctx.Err() != nil {
			return
		}
	}
}

// chooseSides cuts the nodes into two random halves, or isolates one.
func (r *run) chooseSides(rng *rand.Rand) [][]string {
	nodes := slices.Clone(r.nodes)
	rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	cut := 1
	if len(nodes) > 2 && rng.Intn(2) == 0 {
		cut = len(nodes) / 2
	}
	a, b := slices.Clone(nodes[:cut]), slices.Clone(nodes[cut:])
	slices.Sort(a)
	slices.Sort(b)
	return [][]string{a, b}
}
