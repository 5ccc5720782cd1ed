package bench

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// maxGrantEvents bounds the grant log kept for FIFO-inversion counting
// (16 bytes each); past it the log stops growing and the result says so.
const maxGrantEvents = 4_000_000

// recorder collects one run's measurements from all client goroutines. All
// timestamps are nanoseconds on one monotonic clock (time since base), so
// events of different clients compare directly: that is what makes handoff
// and inversions measurable in-process. Only events whose start falls at or
// after measureFromNs (the end of warmup) count.
type recorder struct {
	base          time.Time
	measureFromNs int64

	acquire, release, handoff, wait *Histogram

	grants   []atomic.Int64 // per client, measured grants
	ops      atomic.Int64
	timeouts atomic.Int64
	dropped  atomic.Int64
	events   atomic.Int64 // grant events logged, against maxGrantEvents

	errMu      sync.Mutex
	errs       map[string]int64
	errSamples map[string]string // first message of each kind, for diagnosis
	errSum     atomic.Int64

	keys []keyTrack
}

// keyTrack is the per-key state for handoff and inversions.
type keyTrack struct {
	mu        sync.Mutex
	releaseNs int64 // when the latest release on this key was sent
	pending   bool  // no grant has followed that release yet
	log       []GrantEvent
}

func newRecorder(clients, keys int, warmup time.Duration) *recorder {
	return &recorder{
		base:          time.Now(),
		measureFromNs: int64(warmup),
		acquire:       NewHistogram(),
		release:       NewHistogram(),
		handoff:       NewHistogram(),
		wait:          NewHistogram(),
		grants:        make([]atomic.Int64, clients),
		errs:          make(map[string]int64),
		errSamples:    make(map[string]string),
		keys:          make([]keyTrack, keys),
	}
}

func (r *recorder) now() int64 { return int64(time.Since(r.base)) }

func (r *recorder) measured(startNs int64) bool { return startNs >= r.measureFromNs }

// granted records a successful acquire: the op began wanting the lock at
// opStartNs, sent the winning request at reqNs and got the grant at grantNs.
// The first grant on a key after a release counts as a handoff if its
// request was already waiting when the release was sent.
func (r *recorder) granted(client, key int, opStartNs, reqNs, grantNs int64) {
	k := &r.keys[key]
	k.mu.Lock()
	if k.pending && reqNs < k.releaseNs && grantNs >= k.releaseNs {
		if r.measured(k.releaseNs) {
			r.handoff.Record(time.Duration(grantNs - k.releaseNs))
		}
		k.pending = false
	}
	logIt := r.measured(reqNs) && r.events.Add(1) <= maxGrantEvents
	if logIt {
		k.log = append(k.log, GrantEvent{RequestNs: reqNs, GrantNs: grantNs})
	}
	k.mu.Unlock()
	if !r.measured(reqNs) {
		return
	}
	r.acquire.Record(time.Duration(grantNs - reqNs))
	if r.measured(opStartNs) {
		r.wait.Record(time.Duration(grantNs - opStartNs))
	}
	r.grants[client].Add(1)
}

// releaseSent must be called just before a release goes out.
func (r *recorder) releaseSent(key int, ns int64) {
	k := &r.keys[key]
	k.mu.Lock()
	k.releaseNs = ns
	k.pending = true
	k.mu.Unlock()
}

func (r *recorder) released(sentNs int64, took time.Duration) {
	if r.measured(sentNs) {
		r.release.Record(took)
	}
}

func (r *recorder) timedOut(reqNs int64) {
	if r.measured(reqNs) {
		r.timeouts.Add(1)
	}
}

func (r *recorder) droppedArrival(ns int64) {
	if r.measured(ns) {
		r.dropped.Add(1)
	}
}

func (r *recorder) fail(startNs int64, err error) {
	if !r.measured(startNs) {
		return
	}
	r.errSum.Add(1)
	kind := ErrorKind(err)
	r.errMu.Lock()
	r.errs[kind]++
	if _, ok := r.errSamples[kind]; !ok {
		r.errSamples[kind] = err.Error()
	}
	r.errMu.Unlock()
}

// opDone counts a finished acquire+release cycle and returns the new total.
func (r *recorder) opDone(startNs int64) int64 {
	if !r.measured(startNs) {
		return r.ops.Load()
	}
	return r.ops.Add(1)
}

func (r *recorder) errorsByKind() (counts map[string]int64, samples map[string]string) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return maps.Clone(r.errs), maps.Clone(r.errSamples)
}

// inversions sums FIFO inversions over all keys; call after the run.
func (r *recorder) inversions(slack time.Duration) (total Inversions, events int64) {
	for i := range r.keys {
		k := &r.keys[i]
		k.mu.Lock()
		inv := CountInversions(k.log, int64(slack))
		total.Pairs += inv.Pairs
		total.Overtakers += inv.Overtakers
		events += int64(len(k.log))
		k.mu.Unlock()
	}
	return total, events
}

func (r *recorder) grantCounts() []int64 {
	out := make([]int64, len(r.grants))
	for i := range r.grants {
		out[i] = r.grants[i].Load()
	}
	return out
}
