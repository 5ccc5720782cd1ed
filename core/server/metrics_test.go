package server_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// TestMetricsHaveGoAndProcessCollectors: goal — /metrics carries the
// standard go_* and process_* series next to lockstep's own. Method: scrape
// once and look for one series of each.
func TestMetricsHaveGoAndProcessCollectors(t *testing.T) {
	ts, _ := newServer(t)
	code, b := do(t, "GET", ts.URL+api.PathMetrics, "")
	want := []string{"go_goroutines ", "go_memstats_alloc_bytes ", "lockstep_raft_leader 1"}
	if runtime.GOOS == "linux" {
		want = append(want, "process_start_time_seconds ", "process_open_fds ")
	}
	for _, w := range want {
		if code != 200 || !strings.Contains(string(b), w) {
			t.Errorf("metrics lack %q", w)
		}
	}
}
