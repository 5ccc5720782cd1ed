package stages

import (
	"os"
	"strconv"
	"sync"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

// raftStage maps one hashicorp/raft v1.7.2 timer to a stage name.
type raftStage struct {
	key  []string
	name string
}

// raftStages are the raft timers on the commit path (raft.go, replication.go).
var raftStages = []raftStage{
	// dispatchLogs: the leader stores a batch (StoreLogs, fsync) before
	// replicators may ship it.
	{[]string{"raft", "leader", "dispatchLog"}, "raft_leader_store"},
	// One AppendEntries round trip (index appendRTT) seen by the leader's replicator: send,
	// follower decode and StoreLogs, reply.
	{[]string{"raft", "replication", "appendEntries", "rpc"}, "raft_append_rtt"},
	// The follower's StoreLogs of a non-empty AppendEntries.
	{[]string{"raft", "rpc", "appendEntries", "storeLogs"}, "raft_follower_store"},
	// Dispatch to the leader loop seeing the entry committed, per entry.
	{[]string{"raft", "commitTime"}, "raft_commit"},
	// Committed entries handed to the FSM goroutine, per commit.
	{[]string{"raft", "fsm", "enqueue"}, "raft_fsm_enqueue"},
}

// raftSink feeds the raftStages timers into a histogram and drops the rest.
// hashicorp/raft reports to go-metrics' process-wide sink, so the series is
// per process: every member of `lockd dev` shows the same one, with a pid
// label that lets a scraper count it once.
type raftSink struct {
	metrics.BlackholeSink
	observers []prometheus.Observer
	// An idle group's leader sends an empty AppendEntries every
	// CommitTimeout; its round trip says nothing about commits. raft
	// reports each round trip just before its entry count, on the same
	// goroutine, so the sink holds the round trip per peer until the count
	// comes. Two groups replicating to one peer at once may swap their
	// samples; both are real round trips.
	mu      sync.Mutex
	pending map[string]float32
}

var _ metrics.MetricSink = (*raftSink)(nil)

// appendRTT is the index of the AppendEntries round trip in raftStages.
const appendRTT = 1

var appendLogsKey = []string{"raft", "replication", "appendEntries", "logs"}

var (
	raftOnce sync.Once
	raftVec  *prometheus.HistogramVec
)

// RaftCollector installs the go-metrics sink on first use (replacing
// go-metrics' default blackhole) and returns the histogram it feeds.
func RaftCollector() prometheus.Collector {
	raftOnce.Do(func() {
		raftVec = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "lockstep_raft_stage_seconds",
			Help:        "hashicorp/raft commit-path timers of this process (all groups and members in it).",
			Buckets:     buckets,
			ConstLabels: prometheus.Labels{"pid": strconv.Itoa(os.Getpid())},
		}, []string{"stage"})
		sink := newRaftSink(raftVec)
		conf := metrics.DefaultConfig("")
		conf.EnableHostname = false
		conf.EnableRuntimeMetrics = false
		// Timers arrive as float32 in this unit; microseconds keep
		// sub-millisecond fsyncs exact enough.
		conf.TimerGranularity = 1000 // ns, i.e. µs
		if _, err := metrics.NewGlobal(conf, sink); err != nil {
			panic(err) // NewGlobal fails only for a bad filter, and we set none
		}
	})
	return raftVec
}

func newRaftSink(vec *prometheus.HistogramVec) *raftSink {
	sink := &raftSink{pending: make(map[string]float32)}
	for _, s := range raftStages {
		sink.observers = append(sink.observers, vec.WithLabelValues(s.name))
	}
	return sink
}

// AddSample implements metrics.MetricSink.
func (s *raftSink) AddSample(key []string, val float32) { s.AddSampleWithLabels(key, val, nil) }

// AddSampleWithLabels implements metrics.MetricSink; val is in µs.
func (s *raftSink) AddSampleWithLabels(key []string, val float32, labels []metrics.Label) {
	for i, st := range raftStages {
		if !equalKeys(st.key, key) {
			continue
		}
		if i == appendRTT {
			s.mu.Lock()
			s.pending[peerID(labels)] = val
			s.mu.Unlock()
			return
		}
		s.observers[i].Observe(float64(val) / 1e6)
		return
	}
}

// IncrCounterWithLabels implements metrics.MetricSink: it releases the
// pending round trip to the peer if the AppendEntries carried entries.
func (s *raftSink) IncrCounterWithLabels(key []string, val float32, labels []metrics.Label) {
	if !equalKeys(appendLogsKey, key) {
		return
	}
	peer := peerID(labels)
	s.mu.Lock()
	rtt, ok := s.pending[peer]
	delete(s.pending, peer)
	s.mu.Unlock()
	if ok && val > 0 {
		s.observers[appendRTT].Observe(float64(rtt) / 1e6)
	}
}

func peerID(labels []metrics.Label) string {
	for _, l := range labels {
		if l.Name == "peer_id" {
			return l.Value
		}
	}
	return ""
}

func equalKeys(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
