package checker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/models"
)

// TestReportInjectedViolation injects two overlapping exclusive grants and checks Check fails and the report holds history, verdict and a real visualization.
func TestReportInjectedViolation(t *testing.T) {
	h := clone(t, cleanHistory())
	h.Ops = append(h.Ops, Op{ClientID: 3,
		Input:  models.LockInput{Op: models.Acquire, Resource: "r", ClientID: "intruder", Mode: models.Exclusive, TTLNs: sec},
		Output: models.LockOutput{Granted: true, LeaseID: "L-intruder", Token: 9, LogTimeNs: 2 * sec, ExpiresAtNs: 3 * sec},
		Call:   1500 * ms, Return: 2500 * ms})
	res := Check(context.Background(), h, strictOptions())
	if res.Verdict != Failure {
		t.Fatalf("verdict %s", res.Verdict)
	}
	dir := t.TempDir()
	paths, err := WriteReport(context.Background(), dir, h, res, ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "history.html")
	for _, want := range []string{html, filepath.Join(dir, "verdict.json"), filepath.Join(dir, "ops.json")} {
		if !slices.Contains(paths, want) {
			t.Fatalf("paths %v lack %s", paths, want)
		}
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if len(page) < 10_000 {
		t.Fatalf("history.html is only %d bytes", len(page))
	}
	for _, want := range []string{"L-intruder", "L1", "partition", "linearizability"} {
		if !strings.Contains(page, want) {
			t.Errorf("history.html lacks %q", want)
		}
	}
	var verdict Result
	b, err = os.ReadFile(filepath.Join(dir, "verdict.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &verdict); err != nil {
		t.Fatal(err)
	}
	if verdict.Verdict != Failure || len(verdict.Violations) == 0 || verdict.Violations[0].Check != CheckLinearizability {
		t.Fatalf("verdict.json = %+v", verdict)
	}
}

// TestReportSkipsSuccess checks a passing run writes no report unless asked, and the full set when asked.
func TestReportSkipsSuccess(t *testing.T) {
	h := cleanHistory()
	res := Check(context.Background(), h, strictOptions())
	dir := t.TempDir()
	paths, err := WriteReport(context.Background(), dir, h, res, ReportOptions{})
	if err != nil || len(paths) != 0 {
		t.Fatalf("paths %v err %v", paths, err)
	}
	paths, err = WriteReport(context.Background(), dir, h, res, ReportOptions{Always: true})
	if err != nil || !slices.Contains(paths, filepath.Join(dir, "history.html")) {
		t.Fatalf("paths %v err %v", paths, err)
	}
}
