package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lockstep/lockstep/core/shardmap"
)

// metrics are the gateway's Prometheus series.
type metrics struct {
	requests   *prometheus.CounterVec
	retries    *prometheus.CounterVec
	refreshes  *prometheus.CounterVec
	mapVersion prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_gateway_requests_total", Help: "Requests relayed by operation and HTTP status.",
		}, []string{"op", "status"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_gateway_retries_total", Help: "Attempts retried, by reason.",
		}, []string{"reason"}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_gateway_map_refreshes_total", Help: "Shard map refreshes by result (ok, stale, failed).",
		}, []string{"result"}),
		mapVersion: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lockstep_gateway_map_version", Help: "Version of the shard map the gateway routes by.",
		}),
	}
	reg.MustRegister(m.requests, m.retries, m.refreshes, m.mapVersion,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observeRefresh counts a shard map refresh and tracks the version routed
// by.
func (m *metrics) observeRefresh(r shardmap.Result, version uint64) {
	m.refreshes.WithLabelValues(string(r)).Inc()
	if r == shardmap.Published {
		m.mapVersion.Set(float64(version))
	}
}
