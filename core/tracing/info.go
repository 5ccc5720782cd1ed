package tracing

import (
	"context"
	"encoding/hex"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// Info is what a request's log line and per-namespace count say about it.
// The front end installs it; the node fills it in when it proposes the
// request's command, as only the node knows the shard and the lease id.
type Info struct {
	mu                               sync.Mutex
	resource, client, request, shard string
	// lease is kept as bytes and printed only if the request is logged.
	lease [16]byte
}

type infoKey struct{}

// WithInfo returns ctx carrying a new, empty Info.
func WithInfo(ctx context.Context) (context.Context, *Info) {
	i := new(Info)
	return context.WithValue(ctx, infoKey{}, i), i
}

// InfoFrom returns ctx's Info, nil when no front end installed one (the
// node's own proposals: expiries, announcements).
func InfoFrom(ctx context.Context) *Info {
	i, _ := ctx.Value(infoKey{}).(*Info)
	return i
}

// Note records a command of the request. A request that proposes several
// (a wait that ends in a cancel, an acquire across shards) keeps the first
// non-empty value of each field.
func (i *Info) Note(resource, client, request string, lease [16]byte, shard string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	keep := func(f *string, v string) {
		if *f == "" {
			*f = v
		}
	}
	keep(&i.resource, resource)
	keep(&i.client, client)
	keep(&i.request, request)
	if i.lease == ([16]byte{}) {
		i.lease = lease
	}
	keep(&i.shard, shard)
}

// Resource is the first resource noted, "" when none was.
func (i *Info) Resource() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.resource
}

// LogAttrs are the request's fields for its log line, with the trace id
// of ctx's span when it is sampled, so a log line leads to its trace.
func (i *Info) LogAttrs(ctx context.Context) []slog.Attr {
	i.mu.Lock()
	defer i.mu.Unlock()
	attrs := make([]slog.Attr, 0, 6)
	var lease string
	if i.lease != ([16]byte{}) {
		lease = hex.EncodeToString(i.lease[:])
	}
	for _, f := range [...]struct{ key, value string }{
		{"resource", i.resource}, {"client_id", i.client}, {"request_id", i.request},
		{"lease_id", lease}, {"shard", i.shard},
	} {
		if f.value != "" {
			attrs = append(attrs, slog.String(f.key, f.value))
		}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
	}
	return attrs
}
