package bench

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstep/lockstep/core/ctxtime"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Workload bounds, so a typo cannot ask for a million goroutines or keys.
const (
	maxClients     = 4096
	maxTrackedKeys = 1 << 20
	// errorPause keeps a client whose service is failing from spinning.
	errorPause = 10 * time.Millisecond
	// cleanupTimeout bounds every release, including those of locks still
	// held when the run ends.
	cleanupTimeout = 5 * time.Second
)

// Workload describes one run. Every run is bounded by Warmup+Duration and
// by MaxOps, whichever comes first.
type Workload struct {
	// Name labels the run in reports ("uncontended", "contended").
	Name string
	// Private gives each client its own Keys keys (no contention between
	// clients); otherwise all clients share one key space of Keys keys.
	Private bool
	Keys    int
	// Dist is "uniform" or "zipf" (exponent ZipfS).
	Dist  string
	ZipfS float64
	// Clients is the number of closed-loop clients, or with RatePerSec > 0
	// the open loop's in-flight cap (one client per in-flight op).
	Clients    int
	RatePerSec float64
	Duration   time.Duration
	Warmup     time.Duration
	MaxOps     int64
	Hold       time.Duration
	TTL        time.Duration
	// Wait is how long one acquire may queue; a timed-out acquire is
	// counted and retried on the same key.
	Wait time.Duration
	// SharedFrac is the fraction of acquires asking for shared mode.
	SharedFrac float64
	Policy     api.Policy
	// InversionSlack: grants count as a FIFO inversion only if their
	// requests left more than this apart (see CountInversions).
	InversionSlack time.Duration
	// Seed makes key and mode choices reproducible.
	Seed uint64
	// Progress, if set, gets one line per second; Label prefixes it.
	Progress io.Writer
	Label    string
}

func (w Workload) validate() error {
	var errs []error
	if w.Clients < 1 || w.Clients > maxClients {
		errs = append(errs, fmt.Errorf("clients must be in 1..%d", maxClients))
	}
	if w.Keys < 1 {
		errs = append(errs, errors.New("keys must be >= 1"))
	} else if w.trackedKeys() > maxTrackedKeys {
		errs = append(errs, fmt.Errorf("at most %d keys in total", maxTrackedKeys))
	}
	if w.Duration <= 0 || w.MaxOps <= 0 {
		errs = append(errs, errors.New("duration and max ops must be > 0 (runs are always bounded)"))
	}
	if w.Warmup < 0 || w.Hold < 0 || w.Wait < 0 || w.RatePerSec < 0 || w.InversionSlack < 0 {
		errs = append(errs, errors.New("warmup, hold, wait, rate and inversion slack must be >= 0"))
	}
	if w.TTL < time.Millisecond {
		errs = append(errs, errors.New("ttl must be >= 1ms"))
	}
	if w.SharedFrac < 0 || w.SharedFrac > 1 {
		errs = append(errs, errors.New("shared fraction must be in [0,1]"))
	}
	if w.Policy != api.FIFO && w.Policy != api.Throughput {
		errs = append(errs, fmt.Errorf("policy must be %s or %s", api.FIFO, api.Throughput))
	}
	return errors.Join(errs...)
}

func (w Workload) trackedKeys() int {
	if w.Private {
		return w.Keys * w.Clients
	}
	return w.Keys
}

// run is the state of one Run.
type run struct {
	w       Workload
	picker  KeyPicker
	keys    []string
	lockers []Locker
	rec     *recorder
	// stopAtMax ends the run when the measured op count reaches MaxOps.
	stopAtMax context.CancelFunc
	endNs     sync.Once
	stoppedNs int64
	// cpu is the machine's busy time over the measurement window.
	cpu machineCPU
}

// Run drives workload w against target t and returns its measurements.
func Run(ctx context.Context, t Target, w Workload) (*Result, error) {
	if err := w.validate(); err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	picker, err := NewKeyPicker(w.Dist, w.Keys, w.ZipfS)
	if err != nil {
		return nil, err
	}
	// A fresh key prefix per run keeps leftovers of earlier runs (leases
	// still ticking) out of this one.
	runID := newRequestID()[:8]
	r := &run{w: w, picker: picker, keys: make([]string, w.trackedKeys())}
	for i := range r.keys {
		r.keys[i] = fmt.Sprintf("lb-%s-k%d", runID, i)
	}
	if err := r.openLockers(ctx, t, runID); err != nil {
		return nil, err
	}
	defer r.closeLockers()

	r.rec = newRecorder(w.Clients, len(r.keys), w.Warmup)
	cpuFrom := time.AfterFunc(w.Warmup, r.cpu.start)
	defer cpuFrom.Stop()
	runCtx, cancel := context.WithTimeout(ctx, w.Warmup+w.Duration)
	defer cancel()
	r.stopAtMax = cancel

	stopProgress := r.startProgress()
	var wg sync.WaitGroup
	if w.RatePerSec > 0 {
		r.openLoop(runCtx, &wg)
	} else {
		for i := range w.Clients {
			wg.Go(func() { r.closedClient(runCtx, i) })
		}
	}
	<-runCtx.Done()
	r.markStopped()
	wg.Wait()
	stopProgress()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run interrupted: %w", err)
	}
	return r.result(t), nil
}

func (r *run) openLockers(ctx context.Context, t Target, runID string) error {
	r.lockers = make([]Locker, 0, r.w.Clients)
	for i := range r.w.Clients {
		l, err := t.NewLocker(ctx, ClientConfig{ID: fmt.Sprintf("lb-%s-c%d", runID, i), TTL: r.w.TTL, Policy: r.w.Policy})
		if err != nil {
			r.closeLockers()
			return fmt.Errorf("client %d: %w", i, err)
		}
		r.lockers = append(r.lockers, l)
	}
	return nil
}

func (r *run) closeLockers() {
	for _, l := range r.lockers {
		// A failed close (e.g. an etcd lease revoke at teardown) does not
		// affect measurements already taken.
		if err := l.Close(); err != nil {
			slog.Debug("close bench client", "err", err)
		}
	}
}

// markStopped notes when the run ended (deadline or max ops).
func (r *run) markStopped() {
	r.endNs.Do(func() {
		r.stoppedNs = r.rec.now()
		r.cpu.stop()
	})
}

func (r *run) closedClient(ctx context.Context, client int) {
	rng := rand.New(rand.NewPCG(r.w.Seed, uint64(client)))
	for ctx.Err() == nil {
		r.op(ctx, client, rng, r.rec.now())
	}
}

// openLoop schedules arrivals at a fixed rate for Clients workers through a
// queue of the same depth, so at most 2×Clients arrivals are in flight (run
// or queued); an arrival finding the queue full is dropped and counted,
// which keeps the open loop open instead of silently turning it closed.
func (r *run) openLoop(ctx context.Context, wg *sync.WaitGroup) {
	jobs := make(chan int64, r.w.Clients)
	interval := time.Duration(float64(time.Second) / r.w.RatePerSec)
	interval = max(interval, time.Microsecond)
	wg.Go(func() {
		defer close(jobs)
		next := r.rec.now()
		for ctx.Err() == nil {
			for now := r.rec.now(); next <= now; next += int64(interval) {
				select {
				case jobs <- next:
				default:
					r.rec.droppedArrival(next)
				}
			}
			_ = ctxtime.Sleep(ctx, time.Duration(next-r.rec.now()))
		}
	})
	for i := range r.w.Clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(r.w.Seed, uint64(i)))
			for intendedNs := range jobs {
				if ctx.Err() == nil {
					// Latency counts from the intended arrival, so queueing
					// behind a slow service is not hidden.
					r.op(ctx, i, rng, intendedNs)
				}
			}
		})
	}
}

// op is one acquire+hold+release cycle of one client.
func (r *run) op(ctx context.Context, client int, rng *rand.Rand, opStartNs int64) {
	keyIdx := r.picker.Pick(rng)
	if r.w.Private {
		keyIdx += client * r.w.Keys
	}
	req := AcquireRequest{Key: r.keys[keyIdx], TTL: r.w.TTL, Wait: r.w.Wait, Mode: api.Exclusive}
	if r.w.SharedFrac > 0 && rng.Float64() < r.w.SharedFrac {
		req.Mode = api.Shared
	}
	l := r.lockers[client]

	var g Grant
	var reqNs int64
	for !g.Granted { // bounded by ctx: every Acquire waits at most Wait
		reqNs = r.rec.now()
		var err error
		g, err = l.Acquire(ctx, req)
		if expired(ctx) {
			return
		}
		if err != nil {
			r.rec.fail(reqNs, err)
			_ = ctxtime.Sleep(ctx, errorPause)
			return
		}
		if !g.Granted {
			r.rec.timedOut(reqNs)
		}
	}
	r.rec.granted(client, keyIdx, opStartNs, reqNs, r.rec.now())

	if r.w.Hold > 0 {
		_ = ctxtime.Sleep(ctx, r.w.Hold)
	}
	// A granted lock is always given back, even when the run ends mid-hold,
	// so the release gets its own deadline rather than the run's.
	relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	relNs := r.rec.now()
	r.rec.releaseSent(keyIdx, relNs)
	err := l.Release(relCtx, g)
	r.rec.released(relNs, time.Duration(r.rec.now()-relNs))
	if err != nil {
		r.rec.fail(relNs, err)
		return
	}
	if ctx.Err() == nil && r.rec.opDone(opStartNs) >= r.w.MaxOps {
		r.markStopped()
		r.stopAtMax()
	}
}

func (r *run) result(t Target) *Result {
	w := r.w
	traits := t.Traits()
	measuredNs := max(r.stoppedNs-r.rec.measureFromNs, 1)
	res := &Result{
		Target:     t.Name(),
		Workload:   w.Name,
		Policy:     string(w.Policy),
		Clients:    w.Clients,
		RatePerSec: w.RatePerSec,
		Keys:       w.Keys,
		Private:    w.Private,
		Dist:       w.Dist,
		HoldMs:     ms(w.Hold),
		TTLMs:      ms(w.TTL),
		WaitMs:     ms(w.Wait),
		SharedFrac: w.SharedFrac,
		Traits:     traits,
		HostLoad1:  hostLoad1(),

		DurationS: float64(measuredNs) / 1e9,
		Ops:       r.rec.ops.Load(),

		Acquire:  summarize(r.rec.acquire),
		Release:  summarize(r.rec.release),
		Handoff:  summarize(r.rec.handoff),
		Fairness: fairnessOf(r.rec, w.InversionSlack),

		AcquireTimeouts: r.rec.timeouts.Load(),
		Dropped:         r.rec.dropped.Load(),
		AcquireCDF:      r.rec.acquire.CDF(cdfPoints),
	}
	res.OpsPerSec = float64(res.Ops) / res.DurationS
	if cpu, ok := r.cpu.result(res.Ops); ok {
		res.MachineCPU = &cpu
	}
	res.Errors, res.ErrorSamples = r.rec.errorsByKind()
	if !traits.Policies {
		res.Policy = "native"
	}
	if !traits.Fencing {
		res.Notes = append(res.Notes, "no fencing: tokens are random values")
	}
	if !traits.Queue {
		res.Notes = append(res.Notes, "no server queue: waiting is client-side polling")
	}
	if !traits.Shared && w.SharedFrac > 0 {
		res.Notes = append(res.Notes, "no shared mode: shared requests taken exclusively")
	}
	return res
}
