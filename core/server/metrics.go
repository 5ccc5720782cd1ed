package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lockstep/lockstep/core/node"
)

// metrics are the Prometheus series of one node.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer, n *node.Node) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_requests_total", Help: "API requests by operation and result.",
		}, []string{"op", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lockstep_request_duration_seconds",
			Help:    "API request latency by operation and result.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"op", "result"}),
	}
	gauge := func(name, help string, f func(node.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return f(n.Stats()) })
	}
	reg.MustRegister(m.requests, m.latency,
		// The standard runtime and process series, as every Go exporter has.
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gauge("lockstep_active_leases", "Live leases in the state machine.",
			func(s node.Stats) float64 { return float64(s.Lock.Leases) }),
		gauge("lockstep_queue_depth", "Queued acquire requests across resources.",
			func(s node.Stats) float64 { return float64(s.Lock.Waiters) }),
		gauge("lockstep_resources", "Resources with at least one holder.",
			func(s node.Stats) float64 { return float64(s.Lock.Resources) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "lockstep_expirations_total", Help: "Leases freed by expiry.",
		}, func() float64 { return float64(n.Stats().Lock.Expirations) }),
		gauge("lockstep_raft_leader", "1 if this node is the Raft leader.",
			func(s node.Stats) float64 {
				if s.State == "Leader" {
					return 1
				}
				return 0
			}),
		gauge("lockstep_raft_term", "Current Raft term.",
			func(s node.Stats) float64 { return float64(s.Term) }),
		gauge("lockstep_raft_commit_index", "Raft commit index.",
			func(s node.Stats) float64 { return float64(s.CommitIndex) }),
		gauge("lockstep_raft_applied_index", "Raft applied index.",
			func(s node.Stats) float64 { return float64(s.AppliedIndex) }),
	)
	return m
}

func (m *metrics) observe(op, result string, d time.Duration) {
	m.requests.WithLabelValues(op, result).Inc()
	m.latency.WithLabelValues(op, result).Observe(d.Seconds())
}
