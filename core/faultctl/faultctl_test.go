package faultctl

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

// TestClockControl: goal — offset, rate and jump move the reading as asked
// and a bad request changes nothing. Method: drive the HTTP handler.
func TestClockControl(t *testing.T) {
	c := NewClock()
	h := Handler(c, &Disk{})
	post := func(body string) int {
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, httptest.NewRequest(http.MethodPost, ControlPath, strings.NewReader(body)))
		return rr.Code
	}
	if code := post(`{"offset_ns": 10000000000}`); code != http.StatusNoContent {
		t.Fatalf("offset: status %d", code)
	}
	if got := c.Now(); got < 10*time.Second || got > 11*time.Second {
		t.Fatalf("after offset 10s the reading is %s", got)
	}
	if code := post(`{"jump_ns": -1}`); code != http.StatusBadRequest {
		t.Fatalf("negative jump accepted: %d", code)
	}
	if code := post(`{"rate": 0, "jump_ns": 5000000000}`); code != http.StatusBadRequest {
		t.Fatalf("rate 0 accepted: %d", code)
	}
	if got := c.Now(); got > 11*time.Second {
		t.Fatalf("a refused request moved the clock to %s", got)
	}
	if code := post(`{"jump_ns": 5000000000, "rate": 4}`); code != http.StatusNoContent {
		t.Fatalf("jump: status %d", code)
	}
	before := c.Now()
	time.Sleep(20 * time.Millisecond)
	if d := c.Now() - before; d < 60*time.Millisecond {
		t.Fatalf("rate 4 advanced only %s in 20ms", d)
	}
	if before < 15*time.Second {
		t.Fatalf("jump of 5s not seen: %s", before)
	}
}

// TestTraceRoundTrip: goal — what a node writes is what the harness reads,
// in order and under each record's lock shard, and a torn last line (kill -9 mid-write) is dropped while a
// torn line in the middle is an error. Method: write, tear, read.
func TestTraceRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n1.trace")
	w, err := OpenTrace(path, "n1")
	if err != nil {
		t.Fatal(err)
	}
	var id lock.LeaseID
	id[0] = 7
	g := w.Group(2)
	g.Event(lock.Event{Kind: lock.EventGrant, Index: 3, Resource: "r1", Lease: lock.Lease{ID: id, Token: 9}})
	g.Event(lock.Event{Kind: lock.EventFreed, Index: 4, Resource: "r1"})
	w.Group(3).Wake("r1", 3, id, 1)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ReadTrace(bytes.NewReader(append(b, []byte(`{"k":"ev`)...)))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Kind != KindStart || recs[1].Token != 9 || recs[2].LeaseID != id.String() ||
		recs[1].Group != 2 || recs[2].Group != 3 {
		t.Fatalf("records %+v", recs)
	}
	if recs[1].At < recs[0].At || recs[2].At < recs[1].At {
		t.Fatalf("records out of time order: %+v", recs)
	}
	if _, err := ReadTrace(bytes.NewReader(append([]byte("{bad\n"), b...))); err == nil {
		t.Fatal("a torn line in the middle was accepted")
	}
}
