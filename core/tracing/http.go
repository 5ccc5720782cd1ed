package tracing

import "net/http"

// Transport wraps rt so that each request carries the span context of its
// own context (the caller's client span) as a traceparent header. With
// tracing off it returns rt itself.
func (t *Tracer) Transport(rt http.RoundTripper) http.RoundTripper {
	if t == nil {
		return rt
	}
	return &transport{t: t, next: rt}
}

type transport struct {
	t    *Tracer
	next http.RoundTripper
}

func (tr *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if _, ok := r.Header["Traceparent"]; ok {
		return tr.next.RoundTrip(r)
	}
	h := make(http.Header, 1)
	tr.t.Inject(ctx, h)
	if len(h) == 0 {
		return tr.next.RoundTrip(r)
	}
	// A RoundTripper must not change the caller's request.
	r = r.Clone(ctx)
	for k, v := range h {
		r.Header[k] = v
	}
	return tr.next.RoundTrip(r)
}

// Propagate wraps next so that its requests' contexts carry the remote
// span context of their traceparent header; next starts the spans.
func (t *Tracer) Propagate(next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Traceparent"]; ok {
			r = r.WithContext(t.Extract(r.Context(), r.Header))
		}
		next.ServeHTTP(w, r)
	})
}
