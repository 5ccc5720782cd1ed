package lockd_test

import (
	"context"
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lockstep/lockstep/core/tracing"
)

// BenchmarkTracingHTTPCycle is BenchmarkHTTPCycle's acquire+release cycle,
// sent to a follower so that every request takes the forward hop, with
// tracing off, on but sampling nothing, and on sampling everything (spans
// batched to an exporter that drops them): what each costs a request.
func BenchmarkTracingHTTPCycle(b *testing.B) {
	for _, tc := range []struct {
		name   string
		sample float64 // < 0: no tracer
	}{{"off", -1}, {"sample0", 0}, {"sample1", 1}} {
		b.Run(tc.name, func(b *testing.B) {
			var tracer *tracing.Tracer
			if tc.sample >= 0 {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()),
					sdktrace.WithSampler(sdktrace.TraceIDRatioBased(tc.sample)))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				tracer = tracing.New(tp)
			}
			members := startWithTracer(b, tracer)
			leader, _ := members[0].Shard(1).Leader()
			url := ""
			for _, m := range members {
				if m.Host.ID() != leader.ID {
					url = "http://" + m.Addr()
				}
			}
			b.ReportAllocs()
			runCycles(b, httpCycle(&http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchCallers}}, url))
		})
	}
}
