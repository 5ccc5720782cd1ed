// Package stages exports where a request's latency goes on a member: the
// node's own stages (node.Stage) and, from hashicorp/raft's go-metrics, the
// leader's StoreLogs, the AppendEntries round trip, the follower's
// StoreLogs and the commit. Both are Prometheus histograms with a stage
// label; lockbench -breakdown turns them into a per-stage report.
package stages

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstep/lockstep/core/node"
)

// buckets resolve 25 µs to ~0.6 s in steps of 1.5x: fine enough to place a
// 0.2 ms fsync and a 6 ms request in the same histogram.
var buckets = prometheus.ExponentialBuckets(25e-6, 1.5, 26)

// Recorder times one member's node stages. Its observers are resolved up
// front, so observing is a few atomic adds and no allocation.
type Recorder struct {
	vec       *prometheus.HistogramVec
	observers [node.StageCount]prometheus.Observer
}

var _ node.StageObserver = (*Recorder)(nil)

// New returns a Recorder; register Collector() with the member's registry.
func New() *Recorder {
	r := &Recorder{vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lockstep_stage_seconds",
		Help:    "Time requests spend in each step through this member's lock shards (see node.Stage).",
		Buckets: buckets,
	}, []string{"stage"})}
	for s := range node.StageCount {
		r.observers[s] = r.vec.WithLabelValues(s.String())
	}
	return r
}

// ObserveStage implements node.StageObserver.
func (r *Recorder) ObserveStage(s node.Stage, d time.Duration) {
	if s >= node.StageCount {
		return
	}
	r.observers[s].Observe(d.Seconds())
}

// Collector is the histogram to register.
func (r *Recorder) Collector() prometheus.Collector { return r.vec }
