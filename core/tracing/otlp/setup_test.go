package otlp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep/lockstep/core/tracing/otlp"
)

// collector is a fake OTLP/HTTP receiver counting the export requests per path.
type collector struct {
	mu    sync.Mutex
	paths map[string]int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.paths[r.URL.Path]++
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (c *collector) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paths[path]
}

// TestExportsToTheEndpoint: goal — with --otlp-endpoint set, spans reach
// the collector at /v1/traces when sampled and not at all at sample 0.
// Method: a fake collector; Setup, one span, shutdown (which flushes).
func TestExportsToTheEndpoint(t *testing.T) {
	for _, tc := range []struct {
		sample float64
		want   bool
	}{{1, true}, {0, false}} {
		c := &collector{paths: map[string]int{}}
		ts := httptest.NewServer(c)
		tr, shutdown, err := otlp.Setup(context.Background(), otlp.Options{Endpoint: ts.URL, Sample: tc.sample, Service: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if tr == nil {
			t.Fatal("endpoint set, tracer off")
		}
		_, span := tr.Start(context.Background(), "op", trace.SpanKindServer)
		span.End()
		if err := shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		ts.Close()
		if got := c.count("/v1/traces") > 0; got != tc.want {
			t.Errorf("sample %v: exported %v, want %v (paths %v)", tc.sample, got, tc.want, c.paths)
		}
	}
}

// TestOffWithoutEndpoint: goal — no endpoint means no tracer, and the
// standard environment variable counts only when Env allows it (so a test
// never exports because of the machine it runs on).
func TestOffWithoutEndpoint(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	tr, shutdown, err := otlp.Setup(context.Background(), otlp.Options{Sample: 1})
	if err != nil || tr != nil {
		t.Fatalf("no endpoint, Env off: tracer %v, err %v", tr, err)
	}
	_ = shutdown(context.Background())
	if !(otlp.Options{Env: true}).Enabled() {
		t.Fatal("Env on: the environment's endpoint is ignored")
	}
}

// TestBadSettingsAreRefused: goal — a sample outside 0..1 or an endpoint
// that is not http(s) is a clear ErrConfig, before anything starts.
func TestBadSettingsAreRefused(t *testing.T) {
	for _, o := range []otlp.Options{
		{Sample: -0.1}, {Sample: 1.5},
		{Endpoint: "ftp://collector:4318", Sample: 1}, {Endpoint: "http://", Sample: 1},
		{Endpoint: "http://c:4318/v1/traces?x=1", Sample: 1},
	} {
		if _, _, err := otlp.Setup(context.Background(), o); !errors.Is(err, otlp.ErrConfig) {
			t.Errorf("%+v: err %v, want ErrConfig", o, err)
		}
	}
	for _, ok := range []string{"collector:4318", "http://collector:4318", "https://c:4318/custom/path"} {
		if err := (otlp.Options{Endpoint: ok, Sample: 0.5}).Validate(); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
