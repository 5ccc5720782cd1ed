package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// StageSummary is one stage of the lockstep commit path over a run, from
// the members' /metrics histograms (core/stages).
type StageSummary struct {
	Stage string `json:"stage"`
	// Count is how many times the stage ran: per request, per batch or per
	// RPC, depending on the stage (see stageNotes).
	Count  uint64  `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	// P50Ms and P99Ms are interpolated within 1.5x-wide buckets.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// stageOrder is the order of the report: a request's way through a member.
var stageOrder = []string{
	"http_acquire", "http_release", "propose", "forward", "serve_forward", "enqueue",
	"raft_leader_store", "raft_append_rtt", "raft_follower_store", "raft_commit", "raft_fsm_enqueue",
	"commit", "apply", "return",
}

// stageNotes say what each stage measures and per what.
var stageNotes = map[string]string{
	"http_acquire":        "member HTTP handler, acquire (per request)",
	"http_release":        "member HTTP handler, release (per request)",
	"propose":             "node part of a request on the member that received it (per request)",
	"forward":             "follower's forward round trip to the leader (per forward)",
	"serve_forward":       "leader's handling of a forwarded command (per forward)",
	"enqueue":             "raft.Apply called -> leader loop dispatches the entry (per request)",
	"raft_leader_store":   "leader StoreLogs + fsync of one batch (per batch)",
	"raft_append_rtt":     "leader -> follower AppendEntries with entries, round trip (per RPC)",
	"raft_follower_store": "follower StoreLogs + fsync (per RPC)",
	"raft_commit":         "dispatch -> leader loop sees the commit (per entry)",
	"raft_fsm_enqueue":    "committed batch handed to the FSM goroutine (per commit)",
	"commit":              "dispatch -> FSM starts the entry's batch (per request)",
	"apply":               "FSM batch start -> entry applied (per request)",
	"return":              "entry applied -> proposer runs again (per request)",
}

// StageScrape is the stage histograms of a set of members at one moment,
// merged by stage.
type StageScrape map[string]*stageHistogram

type stageHistogram struct {
	count uint64
	sum   float64
	// upper bounds (seconds) and cumulative counts, ascending.
	upper []float64
	cum   []uint64
}

// ScrapeStages reads /metrics of each member URL and merges the stage
// series. A series with a pid label is per process (raft's timers): every
// member of one `lockd dev` shows it, so it is counted once per pid.
func ScrapeStages(ctx context.Context, urls []string) (StageScrape, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	seen := map[string]bool{}
	out := StageScrape{}
	for _, u := range urls {
		families, err := scrapeMetrics(ctx, client, normalizeBaseURL(u)+"/metrics")
		if err != nil {
			return nil, err
		}
		for _, name := range []string{"lockstep_stage_seconds", "lockstep_raft_stage_seconds", "lockstep_request_duration_seconds"} {
			mf := families[name]
			if mf == nil {
				continue
			}
			for _, m := range mf.GetMetric() {
				stage, pid, ok := stageOf(name, m)
				if !ok {
					continue
				}
				if pid != "" {
					if seen[pid+"/"+stage] {
						continue
					}
					seen[pid+"/"+stage] = true
				}
				out.add(stage, m.GetHistogram())
			}
		}
	}
	return out, nil
}

func scrapeMetrics(ctx context.Context, client *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer drainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %d", url, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	return families, nil
}

// stageOf names the stage of one series; the HTTP request histogram counts
// only successful acquires and releases.
func stageOf(family string, m *dto.Metric) (stage, pid string, ok bool) {
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if family == "lockstep_request_duration_seconds" {
		op := labels["op"]
		if labels["result"] != "ok" || (op != "acquire" && op != "release") {
			return "", "", false
		}
		return "http_" + op, "", true
	}
	return labels["stage"], labels["pid"], labels["stage"] != "" && m.GetHistogram() != nil
}

func (s StageScrape) add(stage string, h *dto.Histogram) {
	if h == nil {
		return
	}
	t := s[stage]
	if t == nil {
		t = &stageHistogram{}
		for _, b := range h.GetBucket() {
			t.upper = append(t.upper, b.GetUpperBound())
		}
		t.cum = make([]uint64, len(t.upper))
		s[stage] = t
	}
	t.count += h.GetSampleCount()
	t.sum += h.GetSampleSum()
	for i, b := range h.GetBucket() {
		if i < len(t.upper) && b.GetUpperBound() == t.upper[i] {
			t.cum[i] += b.GetCumulativeCount()
		}
	}
}

// Since summarizes what happened between before and s, in report order.
func (s StageScrape) Since(before StageScrape) []StageSummary {
	names := slices.Collect(func(yield func(string) bool) {
		for name := range s {
			if !yield(name) {
				return
			}
		}
	})
	slices.SortFunc(names, func(a, b string) int {
		ia, ib := rank(a), rank(b)
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	var out []StageSummary
	for _, name := range names {
		d := s[name].minus(before[name])
		if d.count == 0 {
			continue
		}
		out = append(out, StageSummary{
			Stage: name, Count: d.count, MeanMs: 1e3 * d.sum / float64(d.count),
			P50Ms: 1e3 * d.quantile(0.50), P99Ms: 1e3 * d.quantile(0.99),
		})
	}
	return out
}

func rank(stage string) int {
	if i := slices.Index(stageOrder, stage); i >= 0 {
		return i
	}
	return len(stageOrder)
}

func (h *stageHistogram) minus(b *stageHistogram) stageHistogram {
	d := stageHistogram{count: h.count, sum: h.sum, upper: h.upper, cum: slices.Clone(h.cum)}
	if b == nil || len(b.cum) != len(d.cum) {
		return d
	}
	d.count -= min(b.count, d.count)
	d.sum -= b.sum
	for i := range d.cum {
		d.cum[i] -= min(b.cum[i], d.cum[i])
	}
	return d
}

// quantile interpolates linearly within the bucket holding q, as
// Prometheus' histogram_quantile does.
func (h *stageHistogram) quantile(q float64) float64 {
	if h.count == 0 || len(h.upper) == 0 {
		return math.NaN()
	}
	rankWanted := q * float64(h.count)
	lower, below := 0.0, uint64(0)
	for i, upper := range h.upper {
		if float64(h.cum[i]) >= rankWanted {
			inBucket := h.cum[i] - below
			if inBucket == 0 || math.IsInf(upper, 1) {
				return lower
			}
			return lower + (upper-lower)*(rankWanted-float64(below))/float64(inBucket)
		}
		lower, below = upper, h.cum[i]
	}
	return lower // beyond the last finite bucket
}

// writeBreakdown renders the stage summaries of each result that has them.
func writeBreakdown(b *strings.Builder, results []*Result) {
	for _, r := range results {
		if len(r.Breakdown) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n### Stages: %s %s %s, %d clients (%.0f ops/s)\n\n", r.Target, r.Workload, r.Policy, r.Clients, r.OpsPerSec)
		b.WriteString("| stage | count | mean ms | p50 ms | p99 ms | what |\n|---|--:|--:|--:|--:|---|\n")
		fmt.Fprintf(b, "| client acquire | %d | %s | %s | %s | lockbench, send to reply read |\n",
			r.Acquire.Count, fmtMs(r.Acquire.MeanMs), fmtMs(r.Acquire.P50Ms), fmtMs(r.Acquire.P99Ms))
		fmt.Fprintf(b, "| client release | %d | %s | %s | %s | lockbench, send to reply read |\n",
			r.Release.Count, fmtMs(r.Release.MeanMs), fmtMs(r.Release.P50Ms), fmtMs(r.Release.P99Ms))
		for _, s := range r.Breakdown {
			fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s |\n", s.Stage, s.Count, fmtMs(s.MeanMs), fmtMs(s.P50Ms), fmtMs(s.P99Ms), stageNotes[s.Stage])
		}
	}
}
