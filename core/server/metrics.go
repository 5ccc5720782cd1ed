package server

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the HTTP front end's own series: every request a route
// answered, by operation and result. gRPC calls are not counted here
// (README, Observability).
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// newMetrics registers the series in reg (the service's registry). A
// second front end on the same service counts into the same series.
func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		requests: registered(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_requests_total", Help: "API requests by operation and result.",
		}, []string{"op", "result"})),
		latency: registered(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lockstep_request_duration_seconds",
			Help:    "API request latency by operation and result.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"op", "result"})),
	}
}

// registered registers c in reg, or returns the equal collector already
// there.
func registered[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	var dup prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		return c
	case errors.As(err, &dup):
		if existing, ok := dup.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic("server metrics: " + err.Error())
}

func (m *metrics) observe(op, result string, d time.Duration) {
	m.requests.WithLabelValues(op, result).Inc()
	m.latency.WithLabelValues(op, result).Observe(d.Seconds())
}
