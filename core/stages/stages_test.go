package stages

import (
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstep/lockstep/core/node"
)

// TestRecorderObservesEachStage: goal — every node stage lands in its own
// series. Method: observe each stage once and count the series' samples.
func TestRecorderObservesEachStage(t *testing.T) {
	r := New()
	for s := range node.StageCount {
		r.ObserveStage(s, time.Duration(s+1)*time.Millisecond)
	}
	r.ObserveStage(node.StageCount, time.Second) // out of range: dropped
	for s := range node.StageCount {
		m := &dtoMetric{}
		m.read(t, r.observers[s])
		if m.count != 1 || m.sum != float64(s+1)/1e3 {
			t.Errorf("stage %s: count %d sum %v, want 1 and %v", s, m.count, m.sum, float64(s+1)/1e3)
		}
	}
}

// TestRaftSinkKeepsOnlyRoundTripsWithEntries: goal — an idle group's empty
// AppendEntries (one every CommitTimeout) must not dilute the commit-path
// round trip, while raft's other commit-path timers pass through and the
// rest are dropped. Method: feed the sink what raft's appendStats emits for
// an empty and a non-empty AppendEntries, plus other timers.
func TestRaftSinkKeepsOnlyRoundTripsWithEntries(t *testing.T) {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "x", Buckets: buckets}, []string{"stage"})
	sink := newRaftSink(vec)
	peer := []metrics.Label{{Name: "peer_id", Value: "n2"}}
	rtt := []string{"raft", "replication", "appendEntries", "rpc"}
	sink.AddSampleWithLabels(rtt, 100, peer) // empty: dropped
	sink.IncrCounterWithLabels(appendLogsKey, 0, peer)
	sink.AddSampleWithLabels(rtt, 2000, peer) // 2 ms with 3 entries: kept
	sink.IncrCounterWithLabels(appendLogsKey, 3, peer)
	sink.AddSample([]string{"raft", "commitTime"}, 3000)
	sink.AddSample([]string{"raft", "fsm", "apply"}, 50) // not a stage
	sink.IncrCounterWithLabels(appendLogsKey, 3, peer)   // no pending round trip
	counts := map[string]uint64{}
	for _, st := range raftStages {
		m := &dtoMetric{}
		m.read(t, vec.WithLabelValues(st.name))
		counts[st.name] = m.count
		if st.name == "raft_append_rtt" && m.count == 1 && m.sum != 0.002 {
			t.Errorf("round trip sum %v s, want 0.002", m.sum)
		}
	}
	want := map[string]uint64{"raft_append_rtt": 1, "raft_commit": 1}
	for name, n := range counts {
		if n != want[name] {
			t.Errorf("%s: %d samples, want %d", name, n, want[name])
		}
	}
}
