package service

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/shard"
)

// register fills the member's registry: the runtime and process series,
// the per-shard series, the requests in flight, the namespace counts and
// the configured extra collectors. Front ends add their own series
// (Registry).
func (s *Service) register() error {
	s.namespaces = newNamespaceCounter(s.cfg.Namespaces, s.cfg.NamespaceLimit)
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		// The name predates the gRPC front end, whose requests it counts too.
		Name: "lockstep_http_in_flight", Help: "API requests being served (bounded by MaxInFlight).",
	}, func() float64 { return float64(len(s.inFlight)) })
	all := []prometheus.Collector{
		// The standard runtime and process series, as every Go exporter has.
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		groupCollector{host: s.host},
		s.namespaces.vec,
		inFlight,
	}
	for _, c := range append(all, s.cfg.Collectors...) {
		if err := s.registry.Register(c); err != nil {
			return fmt.Errorf("service metrics: %w", err)
		}
	}
	return nil
}

// groupSeries are the per-group series; each carries a shard label.
var groupSeries = []struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(node.Stats) float64
}{
	{shardDesc("lockstep_active_leases", "Live leases in the state machine."), prometheus.GaugeValue,
		func(s node.Stats) float64 { return float64(s.Lock.Leases) }},
	{shardDesc("lockstep_queue_depth", "Queued acquire requests across resources."), prometheus.GaugeValue,
		func(s node.Stats) float64 { return float64(s.Lock.Waiters) }},
	{shardDesc("lockstep_resources", "Resources with at least one holder or waiter."), prometheus.GaugeValue,
		func(s node.Stats) float64 { return float64(s.Lock.Resources) }},
	{shardDesc("lockstep_expirations_total", "Leases freed by expiry."), prometheus.CounterValue,
		func(s node.Stats) float64 { return float64(s.Lock.Expirations) }},
	{shardDesc("lockstep_raft_leader", "1 if this member leads the shard's Raft group."), prometheus.GaugeValue,
		func(s node.Stats) float64 {
			if s.State == "Leader" {
				return 1
			}
			return 0
		}},
	{shardDesc("lockstep_leader_changes_total", "New shard leaders this member observed (elections and transfers)."), prometheus.CounterValue,
		func(s node.Stats) float64 { return float64(s.LeaderChanges) }},
	{shardDesc("lockstep_raft_term", "Current Raft term."), prometheus.GaugeValue,
		func(s node.Stats) float64 { return float64(s.Term) }},
	{shardDesc("lockstep_raft_commit_index", "Raft commit index."), prometheus.GaugeValue,
		func(s node.Stats) float64 { return float64(s.CommitIndex) }},
	{shardDesc("lockstep_raft_applied_index", "Raft applied index."), prometheus.GaugeValue,
		func(s node.Stats) float64 { return float64(s.AppliedIndex) }},
}

func shardDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"shard"}, nil)
}

// groupCollector reads every lock shard's stats at scrape time: shards
// start after the service (once their count is known).
type groupCollector struct{ host *shard.Host }

var _ prometheus.Collector = groupCollector{}

func (c groupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range groupSeries {
		ch <- s.desc
	}
}

func (c groupCollector) Collect(ch chan<- prometheus.Metric) {
	for i, g := range c.host.Groups() {
		st := g.Stats()
		label := strconv.Itoa(i + 1)
		for _, s := range groupSeries {
			ch <- prometheus.MustNewConstMetric(s.desc, s.kind, s.value(st), label)
		}
	}
}
