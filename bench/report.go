package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Peers each row's throughput is compared with, in order of preference.
var (
	etcdPeers  = []string{"etcd", "etcd1"}
	redisPeers = []string{"redis", "redis-aof"}
)

// WriteReport writes results.json, results.md and the plots into dir.
func WriteReport(dir string, results []*Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report dir: %w", err)
	}
	js, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results.json: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "results.md"))
	if err != nil {
		return fmt.Errorf("create results.md: %w", err)
	}
	if err := WriteMarkdown(f, results); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close results.md: %w", err)
	}
	return WritePlots(dir, results)
}

// WriteMarkdown writes one table row per target/workload/policy/clients.
func WriteMarkdown(w io.Writer, results []*Result) error {
	var b strings.Builder
	b.WriteString("| target | workload | policy | clients | keys | ops | ops/s | CPU µs/cycle | CPU busy | ×etcd | ×redis | acq p50 | acq p99 | acq p99.9 | acq max | rel p99 | handoff p50 | handoff p99 | Jain | starved | wait p99 | out of order | timeouts | errors | load | notes |\n")
	b.WriteString("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|---|\n")
	for _, r := range results {
		keys := fmt.Sprint(r.Keys)
		if r.Private {
			keys += "/client"
		}
		clients := fmt.Sprint(r.Clients)
		if r.RatePerSec > 0 {
			clients = fmt.Sprintf("%d @%.0f/s", r.Clients, r.RatePerSec)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.3f | %d | %s | %.1f%% | %d | %s | %.1f | %s |\n",
			r.Target, r.Workload, r.Policy, clients, keys, r.Ops, r.OpsPerSec, fmtCPU(r), fmtBusy(r),
			ratio(r, peerOf(r, results, etcdPeers)), ratio(r, peerOf(r, results, redisPeers)),
			fmtMs(r.Acquire.P50Ms), fmtMs(r.Acquire.P99Ms), fmtMs(r.Acquire.P999Ms), fmtMs(r.Acquire.MaxMs),
			fmtMs(r.Release.P99Ms), fmtLat(r.Handoff, r.Handoff.P50Ms), fmtLat(r.Handoff, r.Handoff.P99Ms),
			r.Fairness.Jain, r.Fairness.Starved, fmtMs(r.Fairness.WaitP99Ms), 100*r.Fairness.OutOfOrderFrac,
			r.AcquireTimeouts, fmtErrors(r), r.HostLoad1, strings.Join(r.Notes, "; "))
	}
	b.WriteString("\nLatencies in ms. An op is one acquire+release cycle. ×etcd / ×redis: ops/s over the row of the same workload and clients for etcd (3 members; etcd1 if only that ran) and redis (default persistence; redis-aof if only that ran). Handoff: release sent until the next, already waiting, holder is granted (contended keys only). Out of order: share of grants that overtook an earlier request on the same key (requests more than the inversion slack apart; JSON also has the pair count). Load: host 1-minute load average after the run. CPU µs/cycle: the whole machine's busy CPU time (/proc/stat, all cores; servers, peers and this load generator together) over the measurement window, per cycle; CPU busy: that time over the window's wall time and cores (near 100 %, the box was CPU-bound).\n")
	writeBreakdown(&b, results)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write markdown: %w", err)
	}
	return nil
}

// peerOf finds the result of the first available peer target that ran the
// same workload shape as r.
func peerOf(r *Result, all []*Result, peers []string) *Result {
	for _, name := range peers {
		for _, p := range all {
			if p.Target == name && sameShape(p, r) {
				return p
			}
		}
	}
	return nil
}

func sameShape(a, b *Result) bool {
	return a.Workload == b.Workload && a.Clients == b.Clients && a.RatePerSec == b.RatePerSec &&
		a.Keys == b.Keys && a.Private == b.Private && a.Dist == b.Dist && a.HoldMs == b.HoldMs &&
		a.SharedFrac == b.SharedFrac
}

func ratio(r, peer *Result) string {
	if peer == nil || peer.OpsPerSec == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", r.OpsPerSec/peer.OpsPerSec)
}

func fmtCPU(r *Result) string {
	if r.MachineCPU == nil || r.Ops == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", r.MachineCPU.PerCycleUs)
}

func fmtBusy(r *Result) string {
	if r.MachineCPU == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*r.MachineCPU.Utilisation)
}

func fmtMs(v float64) string {
	switch {
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

// fmtLat prints a latency, or a dash when nothing was measured.
func fmtLat(s LatencySummary, v float64) string {
	if s.Count == 0 {
		return "–"
	}
	return fmtMs(v)
}

func fmtErrors(r *Result) string {
	if len(r.Errors) == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, r.Errors[k]))
	}
	return strings.Join(parts, " ")
}
