package faultctl

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/wal"
)

// postDisk sends body to DiskPath and decodes the answer.
func postDisk(t *testing.T, h http.Handler, body string) (int, map[string]any) {
	t.Helper()
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest(http.MethodPost, DiskPath, strings.NewReader(body)))
	var out map[string]any
	if err := json.Unmarshal(rr.Body.Bytes(), &out); err != nil {
		t.Fatalf("answer %q to %s is not JSON: %v", rr.Body.String(), body, err)
	}
	return rr.Code, out
}

// TestDiskControl: goal — the disk endpoint makes a real WAL's syncs slow
// or failing as asked, a failed sync breaks that log for good (the WAL's
// rule) while the endpoint reports it, and bad input is a 400 with the
// API's error shape that changes nothing. Method: a WAL opened with the
// disk's seam, driven through the HTTP handler.
func TestDiskControl(t *testing.T) {
	d := &Disk{}
	h := Handler(NewClock(), d)
	s, err := wal.Open(t.TempDir(), wal.Options{BeforeSync: d.BeforeSync,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	for _, bad := range []string{`{"delay_ns": -1}`, `{"delay_ns": 60000000000}`, `{"fail": "yes"}`, `not json`} {
		code, out := postDisk(t, h, bad)
		if code != http.StatusBadRequest || out["code"] != "invalid_argument" || out["error"] == "" {
			t.Fatalf("%s: status %d %v, want 400 invalid_argument", bad, code, out)
		}
	}
	if code, out := postDisk(t, h, `{"delay_ns": 50000000}`); code != http.StatusOK || out["delay_ns"] != float64(50e6) {
		t.Fatalf("delay: status %d %v", code, out)
	}
	start := time.Now()
	if err := s.StoreLog(&raft.Log{Index: 1, Term: 1}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("a write under a 50ms disk delay took %s", took)
	}
	if code, _ := postDisk(t, h, `{"fail": true}`); code != http.StatusOK {
		t.Fatalf("fail: status %d", code)
	}
	if err := s.StoreLog(&raft.Log{Index: 2, Term: 1}); !errors.Is(err, ErrDiskFault) {
		t.Fatalf("write on a failing disk = %v, want ErrDiskFault", err)
	}
	code, out := postDisk(t, h, `{}`)
	if code != http.StatusOK || out["failed_syncs"] != float64(1) || out["fail"] != false {
		t.Fatalf("heal: status %d %v, want one failed sync reported", code, out)
	}
	if err := s.StoreLog(&raft.Log{Index: 2, Term: 1}); !errors.Is(err, ErrDiskFault) {
		t.Fatalf("write after heal = %v: the WAL must stay broken until reopened", err)
	}
	if err := d.BeforeSync(); err != nil {
		t.Fatalf("a healed disk still fails: %v", err)
	}
}
