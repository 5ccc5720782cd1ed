package lockd_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/gateway"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/tracing"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// startTraced starts three members of one lock shard that record every
// span into exp (sampled always, exported synchronously).
func startTraced(t *testing.T) ([]*lockd.Member, *tracing.Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracer := tracing.New(tp)
	return startWithTracer(t, tracer), tracer, exp
}

// startWithTracer starts three members of one lock shard, serving gRPC
// too, with tracer (nil: off), and waits until each knows the leader.
func startWithTracer(t testing.TB, tracer *tracing.Tracer) []*lockd.Member {
	t.Helper()
	members, _ := startShardedWith(t, 1, 3, func(o *lockd.Options) {
		o.GRPCAddr, o.SpreadInterval, o.Tracer = "127.0.0.1:0", -1, tracer
	})
	deadline := time.Now().Add(15 * time.Second)
	for _, m := range members {
		for _, ok := m.Shard(1).Leader(); !ok; _, ok = m.Shard(1).Leader() {
			if time.Now().After(deadline) {
				t.Fatal("no leader within 15s")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return members
}

// follower is a member that does not lead shard 1, and the leader's id.
func follower(t *testing.T, members []*lockd.Member) (*lockd.Member, string) {
	t.Helper()
	leader, _ := members[0].Shard(1).Leader()
	for _, m := range members {
		if m.Host.ID() != leader.ID {
			return m, leader.ID
		}
	}
	t.Fatal("no follower")
	return nil, ""
}

// toMember sends every request to one member, whatever the gateway picked.
type toMember struct {
	addr string
	next http.RoundTripper
}

func (tm toMember) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = tm.addr, tm.addr
	return tm.next.RoundTrip(r)
}

// spanTree indexes the spans of one trace.
type spanTree struct {
	byID map[trace.SpanID]tracetest.SpanStub
}

func treeOf(spans tracetest.SpanStubs, id trace.TraceID) spanTree {
	st := spanTree{byID: map[trace.SpanID]tracetest.SpanStub{}}
	for _, s := range spans {
		if s.SpanContext.TraceID() == id {
			st.byID[s.SpanContext.SpanID()] = s
		}
	}
	return st
}

// path is the names from s up to the root, each with its node attribute.
func (st spanTree) path(s tracetest.SpanStub) []string {
	var out []string
	for {
		name := s.Name
		for _, a := range s.Attributes {
			if a.Key == "lockstep.node" {
				name += "@" + a.Value.AsString()
			}
		}
		out = append(out, name)
		parent, ok := st.byID[s.Parent.SpanID()]
		if !s.Parent.IsValid() || !ok {
			slices.Reverse(out)
			return out
		}
		s = parent
	}
}

func (st spanTree) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range st.byID {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Goal: one acquire sent through the gateway to a follower is one trace
// whose spans run, each the child of the one before, from the client's
// span (its traceparent) through the gateway, the follower's HTTP handler and proposal, the forward hop and
// the leader's Raft apply, down to the commit and the state machine.
// Method: three members and a gateway share an in-memory exporter; the
// gateway's transport is pinned to a follower; read the chain of parents
// from the fsm.apply span up to the root.
func TestTraceFromGatewayToApply(t *testing.T) {
	members, tracer, exp := startTraced(t)
	f, leaderID := follower(t, members)
	g, err := gateway.New(gateway.Config{
		Join: []string{f.Addr()}, HTTPAddr: "127.0.0.1:0", RequestTimeout: 5 * time.Second,
		RefreshInterval: time.Hour, BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		MaxBodyBytes: 1 << 20, Tracer: tracer,
		Transport: toMember{addr: f.Addr(), next: http.DefaultTransport},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(g.Handler())
	t.Cleanup(ts.Close)

	// The client's own span goes along as a traceparent header.
	ctx, client := tracer.Start(context.Background(), "client", trace.SpanKindClient)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+api.PathAcquire,
		strings.NewReader(`{"resource":"traced","client_id":"c1","ttl":10000}`))
	resp, err := (&http.Client{Transport: tracer.Transport(http.DefaultTransport)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out api.AcquireResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || !out.Granted {
		t.Fatalf("acquire: %d %+v %v", resp.StatusCode, out, err)
	}
	resp.Body.Close()
	client.End()
	id := client.SpanContext().TraceID()
	var tree spanTree
	waitFor(t, func() bool {
		tree = treeOf(exp.GetSpans(), id)
		// The gateway ends its span after the reply is on its way.
		return len(tree.named("fsm.apply")) > 0 && len(tree.named("gateway acquire")) > 0
	})
	applies := tree.named("fsm.apply")
	if len(applies) != 1 {
		t.Fatalf("%d fsm.apply spans in the trace, want 1", len(applies))
	}
	got := strings.Join(tree.path(applies[0]), " > ")
	fid := f.Host.ID()
	want := strings.Join([]string{
		"client", "gateway acquire", "gateway.attempt", "lockstep acquire@" + fid, "node.propose@" + fid, "node.forward@" + fid,
		"node.serve_forward@" + leaderID, "raft.apply@" + leaderID, "fsm.apply",
	}, " > ")
	if got != want {
		t.Fatalf("span chain\n got: %s\nwant: %s", got, want)
	}
	for _, name := range []string{"raft.enqueue", "raft.commit"} {
		if s := tree.named(name); len(s) != 1 || tree.byID[s[0].Parent.SpanID()].Name != "raft.apply" {
			t.Errorf("%s: %d spans, want one under raft.apply", name, len(s))
		}
	}
	if attr := attrOf(tree.named("node.propose")[0].Attributes, "lockstep.resource"); attr != "traced" {
		t.Errorf("node.propose resource attribute %q", attr)
	}
}

func attrOf(attrs []attribute.KeyValue, key attribute.Key) string {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value.Emit()
		}
	}
	return ""
}

// Goal: a gRPC call carries its caller's trace: the member's server span
// is the child of the span in the call's traceparent metadata, and the
// proposal and apply follow under it. Method: start a client span with the
// test's tracer, inject it into the outgoing metadata, acquire on a
// follower over gRPC, and walk up from the apply.
func TestTraceThroughGRPC(t *testing.T) {
	members, tracer, exp := startTraced(t)
	f, leaderID := follower(t, members)
	conn, err := grpc.NewClient(f.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, span := tracer.Start(context.Background(), "client", trace.SpanKindClient)
	_, err = lockstepv1.NewLockClient(conn).Acquire(tracer.InjectOutgoing(ctx),
		&lockstepv1.AcquireRequest{Resource: "grpc-traced", ClientId: "c1", TtlMs: 10000})
	span.End()
	if err != nil {
		t.Fatal(err)
	}
	id := span.SpanContext().TraceID()
	var tree spanTree
	waitFor(t, func() bool {
		tree = treeOf(exp.GetSpans(), id)
		return len(tree.named("fsm.apply")) > 0 && len(tree.named("lockstep acquire")) > 0
	})
	got := strings.Join(tree.path(tree.named("fsm.apply")[0]), " > ")
	fid := f.Host.ID()
	want := strings.Join([]string{
		"client", "lockstep acquire", "node.propose@" + fid, "node.forward@" + fid,
		"node.serve_forward@" + leaderID, "raft.apply@" + leaderID, "fsm.apply",
	}, " > ")
	if got != want {
		t.Fatalf("span chain\n got: %s\nwant: %s", got, want)
	}
}
