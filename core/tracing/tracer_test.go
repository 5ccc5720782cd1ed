package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	"github.com/lockstep/lockstep/core/tracing"
)

func newTracer(t *testing.T) *tracing.Tracer {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tracing.New(tp)
}

// TestOffIsFree: goal — a nil Tracer (tracing off) allocates nothing and
// changes nothing: no span, no header, the same transport and handler.
func TestOffIsFree(t *testing.T) {
	var off *tracing.Tracer
	ctx := context.Background()
	h := http.Header{}
	allocs := testing.AllocsPerRun(100, func() {
		c, span := off.Start(ctx, "x", trace.SpanKindServer)
		span.End()
		off.Inject(c, h)
		_ = off.Extract(c, h)
		_ = off.ExtractIncoming(c)
		_ = off.InjectOutgoing(c)
	})
	if allocs != 0 {
		t.Fatalf("off: %v allocations, want 0", allocs)
	}
	if len(h) != 0 {
		t.Fatalf("off injected %v", h)
	}
	if rt := off.Transport(http.DefaultTransport); rt != http.DefaultTransport {
		t.Fatal("off wrapped the transport")
	}
	if tracing.New(nil) != nil {
		t.Fatal("New(nil) is not off")
	}
}

// TestHTTPCarriesTheSpan: goal — a request sent through Transport under a
// span arrives with a traceparent that Propagate turns back into that span
// as the remote parent, and the caller's request is left unchanged.
func TestHTTPCarriesTheSpan(t *testing.T) {
	tr := newTracer(t)
	var got trace.SpanContext
	ts := httptest.NewServer(tr.Propagate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = trace.SpanContextFromContext(r.Context())
	})))
	t.Cleanup(ts.Close)
	ctx, span := tr.Start(context.Background(), "client", trace.SpanKindClient)
	defer span.End()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	resp, err := (&http.Client{Transport: tr.Transport(http.DefaultTransport)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !got.IsRemote() || got.TraceID() != span.SpanContext().TraceID() || got.SpanID() != span.SpanContext().SpanID() {
		t.Fatalf("server saw %v, want remote %v", got, span.SpanContext())
	}
	if len(req.Header) != 0 {
		t.Fatalf("caller's request changed: %v", req.Header)
	}
}

// TestGRPCMetadataCarriesTheSpan: goal — InjectOutgoing and ExtractIncoming
// agree on the metadata key, and keep metadata already set.
func TestGRPCMetadataCarriesTheSpan(t *testing.T) {
	tr := newTracer(t)
	ctx, span := tr.Start(context.Background(), "client", trace.SpanKindClient)
	defer span.End()
	out := tr.InjectOutgoing(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer x"))
	md, _ := metadata.FromOutgoingContext(out)
	if len(md.Get("authorization")) != 1 || len(md.Get("traceparent")) != 1 {
		t.Fatalf("outgoing metadata %v", md)
	}
	in := tr.ExtractIncoming(metadata.NewIncomingContext(context.Background(), md))
	if got := trace.SpanContextFromContext(in); got.SpanID() != span.SpanContext().SpanID() || !got.IsRemote() {
		t.Fatalf("extracted %v, want %v", got, span.SpanContext())
	}
}

// TestInfoKeepsTheFirstValues: goal — a request that proposes several
// commands logs the first resource, client, request id and lease it noted,
// and the trace id only when its span is sampled.
func TestInfoKeepsTheFirstValues(t *testing.T) {
	ctx, info := tracing.WithInfo(context.Background())
	if tracing.InfoFrom(ctx) != info || tracing.InfoFrom(context.Background()) != nil {
		t.Fatal("InfoFrom does not find the installed Info")
	}
	info.Note("a:r", "c1", "", [16]byte{}, "2")
	info.Note("b:r", "c2", "req-9", [16]byte{0xab, 15: 1}, "3")
	got := map[string]string{}
	for _, a := range info.LogAttrs(ctx) {
		got[a.Key] = a.Value.String()
	}
	want := map[string]string{"resource": "a:r", "client_id": "c1", "request_id": "req-9", "lease_id": "ab000000000000000000000000000001", "shard": "2"}
	if len(got) != len(want) {
		t.Fatalf("attrs %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	sctx, span := newTracer(t).Start(ctx, "x", trace.SpanKindServer)
	defer span.End()
	var traceID string
	for _, a := range info.LogAttrs(sctx) {
		if a.Key == "trace_id" {
			traceID = a.Value.String()
		}
	}
	if traceID != span.SpanContext().TraceID().String() {
		t.Fatalf("trace_id %q, want %s", traceID, span.SpanContext().TraceID())
	}
}
