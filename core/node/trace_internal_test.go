package node

import (
	"context"
	"errors"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/tracing"
)

// TestTracingOffAllocatesNothing: goal — with no Tracer the spans a
// request passes through (propose, forward, serve, apply and its steps)
// cost no allocation. Method: testing.AllocsPerRun over the span calls of
// one forwarded proposal; the same calls with a sampling tracer must
// allocate, or the measurement would prove nothing.
func TestTracingOffAllocatesNothing(t *testing.T) {
	n := &Node{cfg: Config{ID: "n1", Group: "1"}}
	cmd := lock.Command{Op: lock.OpAcquire, Resource: "r", ClientID: "c", LeaseID: lock.LeaseID{1}}
	now := time.Now()
	times := stageTimes{dispatched: now.Add(time.Millisecond), batchStart: now.Add(2 * time.Millisecond), applied: now.Add(3 * time.Millisecond)}
	failed := errors.New("failed")
	spans := func() {
		ctx, span := n.startPropose(context.Background(), &cmd)
		fctx, fspan := n.startForward(ctx, Peer{ID: "n2"})
		endSpan(fspan, failed)
		sctx, sspan := n.startNodeSpan(fctx, "node.serve_forward", trace.SpanKindServer)
		actx, aspan := n.startNodeSpan(sctx, "raft.apply", trace.SpanKindInternal)
		n.traceApply(actx, aspan, now, times)
		endSpan(aspan, nil)
		endSpan(sspan, nil)
		endSpan(span, nil)
	}
	if off := testing.AllocsPerRun(200, spans); off != 0 {
		t.Fatalf("tracing off: %v allocations per request, want 0", off)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	n.cfg.Tracer = tracing.New(tp)
	if on := testing.AllocsPerRun(20, spans); on == 0 {
		t.Fatal("tracing on allocates nothing either: the check measures nothing")
	}
}
