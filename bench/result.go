package bench

import (
	"slices"
	"time"
)

// cdfPoints bounds the acquire CDF kept per result (for plots and JSON).
const cdfPoints = 200

// Result is one run of one workload against one target.
type Result struct {
	Target   string `json:"target"`
	Workload string `json:"workload"`
	// Policy is fifo or throughput, or "native" for targets that ignore it.
	Policy     string  `json:"policy"`
	Clients    int     `json:"clients"`
	RatePerSec float64 `json:"rate_per_sec,omitempty"`
	Keys       int     `json:"keys"`
	Private    bool    `json:"private_keys"`
	Dist       string  `json:"dist"`
	HoldMs     float64 `json:"hold_ms"`
	TTLMs      float64 `json:"ttl_ms"`
	WaitMs     float64 `json:"wait_ms"`
	SharedFrac float64 `json:"shared_frac"`
	Traits     Traits  `json:"traits"`
	// HostLoad1 is the 1-minute load average at the end of the run: the
	// bench shares its host, and numbers from a busy one are noisier.
	HostLoad1 float64 `json:"host_load1"`

	DurationS float64 `json:"duration_s"`
	// Ops counts complete acquire+release cycles.
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	// MachineCPU is the whole machine's CPU over the measurement window
	// (servers, peers and this generator together; /proc/stat), nil where
	// it cannot be read.
	MachineCPU *MachineCPU `json:"machine_cpu,omitempty"`

	Acquire LatencySummary `json:"acquire"`
	Release LatencySummary `json:"release"`
	// Handoff: release sent -> next (already waiting) holder granted.
	Handoff  LatencySummary `json:"handoff"`
	Fairness Fairness       `json:"fairness"`

	// AcquireTimeouts counts acquires that ran out of wait (retried).
	AcquireTimeouts int64 `json:"acquire_timeouts"`
	// Dropped counts open-loop arrivals refused by the in-flight cap.
	Dropped int64            `json:"dropped,omitempty"`
	Errors  map[string]int64 `json:"errors"`
	// ErrorSamples holds the first message seen of each error kind.
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
	Notes        []string          `json:"notes,omitempty"`

	AcquireCDF []CDFPoint `json:"acquire_cdf"`
	// Breakdown is the members' per-stage latency over the run (lockbench
	// -breakdown, lockstep only; the warm-up is included).
	Breakdown []StageSummary `json:"breakdown,omitempty"`
}

// ErrorCount is the total over all error kinds.
func (r *Result) ErrorCount() int64 {
	var n int64
	for _, v := range r.Errors {
		n += v
	}
	return n
}

// LatencySummary is a histogram boiled down to the usual percentiles (ms).
type LatencySummary struct {
	Count  uint64  `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
}

func summarize(h *Histogram) LatencySummary {
	return LatencySummary{
		Count:  h.Count(),
		MeanMs: ms(h.Mean()),
		P50Ms:  ms(h.Quantile(0.50)),
		P90Ms:  ms(h.Quantile(0.90)),
		P99Ms:  ms(h.Quantile(0.99)),
		P999Ms: ms(h.Quantile(0.999)),
		MaxMs:  ms(h.Max()),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Fairness describes how evenly clients were served.
type Fairness struct {
	// Jain is Jain's index over per-client grant counts.
	Jain float64 `json:"jain"`
	// Starved counts clients with no grant at all.
	Starved   int   `json:"starved"`
	MinGrants int64 `json:"min_grants"`
	MaxGrants int64 `json:"max_grants"`
	// Wait is from first wanting a lock to holding it, across timeouts.
	WaitP99Ms float64 `json:"wait_p99_ms"`
	WaitMaxMs float64 `json:"wait_max_ms"`
	// Inversions counts grant pairs served out of request order per key
	// (requests more than InversionSlackMs apart); OutOfOrderFrac is the
	// share of grants that overtook an earlier request. Both over
	// InversionEvents logged grants (LogTruncated if the log filled).
	Inversions       int64   `json:"fifo_inversions"`
	OutOfOrderFrac   float64 `json:"out_of_order_frac"`
	InversionSlackMs float64 `json:"inversion_slack_ms"`
	InversionEvents  int64   `json:"inversion_events"`
	LogTruncated     bool    `json:"log_truncated,omitempty"`
}

func fairnessOf(r *recorder, inversionSlack time.Duration) Fairness {
	counts := r.grantCounts()
	f := Fairness{
		Jain:      JainIndex(counts),
		WaitP99Ms: ms(r.wait.Quantile(0.99)),
		WaitMaxMs: ms(r.wait.Max()),
	}
	for _, c := range counts {
		if c == 0 {
			f.Starved++
		}
	}
	if len(counts) > 0 {
		f.MinGrants, f.MaxGrants = slices.Min(counts), slices.Max(counts)
	}
	inv, events := r.inversions(inversionSlack)
	f.Inversions, f.InversionEvents = inv.Pairs, events
	if events > 0 {
		f.OutOfOrderFrac = float64(inv.Overtakers) / float64(events)
	}
	f.InversionSlackMs = ms(inversionSlack)
	f.LogTruncated = r.events.Load() > maxGrantEvents
	return f
}
