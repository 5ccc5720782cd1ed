package server_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/node/nodetest"
	"github.com/lockstep/lockstep/core/server"
	"github.com/lockstep/lockstep/core/service"
	"github.com/lockstep/lockstep/core/shard"
)

// logBuffer collects JSON log lines from several goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines are the logged records whose msg is msg.
func (b *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// observedServer is a one-node shard "1" whose node and server log to
// logs at debug, with the namespace labels given.
func observedServer(t *testing.T, cfg service.Config) (*httptest.Server, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := nodetest.New(t, 1, func(nc *node.Config) { nc.Group, nc.Logger = "1", logger })
	cfg.Logger = logger
	ts := httptest.NewServer(front(t, shard.Single(c.Nodes[0]), cfg, server.Config{}).Handler())
	t.Cleanup(ts.Close)
	return ts, logs
}

// Goal: a request's log line names its request id, client id, lease id
// and shard, and the leader writes a debug line for the grant (and later
// the expiry) with the same lease. Method: acquire with a request id on a
// one-node shard logging JSON at debug; let the lease expire.
func TestRequestLogCarriesIDs(t *testing.T) {
	ts, logs := observedServer(t, service.Config{})
	code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"ns:r","client_id":"c1","request_id":"req-1","ttl":300}`)
	if code != 200 {
		t.Fatalf("acquire: %d %s", code, b)
	}
	var out api.AcquireResponse
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	for _, l := range logs.lines(t, "request") {
		if l["op"] == "acquire" {
			req = l
		}
	}
	want := map[string]any{"resource": "ns:r", "client_id": "c1", "request_id": "req-1", "lease_id": out.LeaseID,
		"shard": "1", "result": "200", "level": "DEBUG"}
	for k, v := range want {
		if req[k] != v {
			t.Errorf("request log %s = %v, want %v (line %v)", k, req[k], v, req)
		}
	}
	waitLine := func(msg string) map[string]any {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for _, l := range logs.lines(t, msg) {
				if l["lease_id"] == out.LeaseID {
					return l
				}
			}
		}
		t.Fatalf("no %q line for lease %s", msg, out.LeaseID)
		return nil
	}
	for _, msg := range []string{"lock granted", "lease expired"} {
		l := waitLine(msg)
		if l["resource"] != "ns:r" || l["client_id"] != "c1" || l["shard"] != "1" || l["level"] != "DEBUG" {
			t.Errorf("%s line %v", msg, l)
		}
	}
}

// Goal: per-namespace request counts stay bounded: the first
// NamespaceLimit namespaces get a label, every later one (and a name
// without a namespace) counts as "other"; with a configured list only
// those get a label. Method: acquires on several namespaces, then scrape.
func TestNamespaceCountsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  service.Config
		want []string
		not  []string
	}{
		{"first seen", service.Config{NamespaceLimit: 2}, []string{
			`lockstep_namespace_requests_total{namespace="a",op="acquire"} 2`,
			`lockstep_namespace_requests_total{namespace="b",op="acquire"} 1`,
			`lockstep_namespace_requests_total{namespace="other",op="acquire"} 2`,
			`lockstep_namespace_requests_total{namespace="a",op="status"} 1`,
		}, []string{`namespace="c"`, `namespace="(none)"`}},
		{"configured", service.Config{Namespaces: []string{"c", "(none)"}}, []string{
			`lockstep_namespace_requests_total{namespace="c",op="acquire"} 1`,
			`lockstep_namespace_requests_total{namespace="(none)",op="acquire"} 1`,
			`lockstep_namespace_requests_total{namespace="other",op="acquire"} 3`,
			`lockstep_namespace_requests_total{namespace="other",op="status"} 1`,
		}, []string{`namespace="a"`, `namespace="b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, _ := observedServer(t, tc.cfg)
			for _, r := range []string{"a:1", "b:1", "a:2", "c:1", "plain"} {
				if code, b := do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"`+r+`","client_id":"c","ttl":10000}`); code != 200 {
					t.Fatalf("acquire %s: %d %s", r, code, b)
				}
			}
			if code, b := do(t, "GET", ts.URL+api.PathStatus+"?resource=a:1", ""); code != 200 {
				t.Fatalf("status: %d %s", code, b)
			}
			// Refused before reaching a shard: not counted anywhere.
			do(t, "POST", ts.URL+api.PathAcquire, `{"resource":"a:3","ttl":10000}`)
			_, b := do(t, "GET", ts.URL+api.PathMetrics, "")
			for _, w := range tc.want {
				if !strings.Contains(string(b), w+"\n") {
					t.Errorf("metrics lack %s", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(string(b), n) {
					t.Errorf("metrics have %s", n)
				}
			}
		})
	}
}

// Goal: /metrics reports the leader changes a member observed per shard
// (one: its own election).
func TestMetricsCountLeaderChanges(t *testing.T) {
	ts, _ := observedServer(t, service.Config{})
	var b []byte
	// The count follows raft's observation, which may trail IsLeader.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, b = do(t, "GET", ts.URL+api.PathMetrics, ""); strings.Contains(string(b), `lockstep_leader_changes_total{shard="1"} 1`+"\n") {
			return
		}
	}
	t.Fatalf("no leader change counted:\n%s", grepLines(string(b), "leader"))
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
