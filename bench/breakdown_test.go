package bench

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestStageBreakdown: goal — the breakdown adds up members' per-member
// series, counts a per-process series (pid label) once however many members
// of that process show it, subtracts the scrape before the run, and
// interpolates quantiles inside buckets. Method: two fake members in one
// "process", scraped before and after a few observations.
func TestStageBreakdown(t *testing.T) {
	buckets := []float64{0.001, 0.002, 0.004}
	shared := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lockstep_raft_stage_seconds", Buckets: buckets,
		ConstLabels: prometheus.Labels{"pid": "7"}}, []string{"stage"})
	var urls []string
	var own []*prometheus.HistogramVec
	for range 2 {
		reg := prometheus.NewRegistry()
		vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lockstep_stage_seconds", Buckets: buckets}, []string{"stage"})
		reg.MustRegister(vec, shared)
		own = append(own, vec)
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	own[0].WithLabelValues("commit").Observe(0.0015) // before the run: subtracted
	ctx := context.Background()
	before, err := ScrapeStages(ctx, urls)
	if err != nil {
		t.Fatal(err)
	}
	own[0].WithLabelValues("commit").Observe(0.0015)
	own[1].WithLabelValues("commit").Observe(0.0015)
	shared.WithLabelValues("raft_commit").Observe(0.003)
	after, err := ScrapeStages(ctx, urls)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]StageSummary{}
	for _, s := range after.Since(before) {
		got[s.Stage] = s
	}
	if c := got["commit"]; c.Count != 2 || math.Abs(c.MeanMs-1.5) > 1e-9 || c.P50Ms != 1.5 {
		t.Errorf("commit: %+v, want 2 samples, mean 1.5 ms, p50 1.5 ms (middle of the 1-2 ms bucket)", c)
	}
	if r := got["raft_commit"]; r.Count != 1 {
		t.Errorf("raft_commit: %+v, want 1 sample (one process, shown by two members)", r)
	}
	if len(got) != 2 {
		t.Errorf("stages %v, want commit and raft_commit only (the rest saw nothing)", got)
	}
}

// TestScrapeStagesFailsOnBadMember: goal — a member that does not answer
// fails the breakdown instead of silently shrinking it.
func TestScrapeStagesFailsOnBadMember(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	if _, err := ScrapeStages(context.Background(), []string{srv.URL}); err == nil {
		t.Fatal("scrape of a 404 member succeeded")
	}
}
