package service

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Labels of lockstep_namespace_requests_total beyond the named namespaces.
const (
	// otherNamespace counts every namespace without a label of its own.
	otherNamespace = "other"
	// noNamespace is a resource name without the separator.
	noNamespace = "(none)"
	// namespaceSep ends a resource's namespace ("billing:invoice-7").
	namespaceSep = ":"
)

// namespaceCounter counts API requests per namespace with a bounded set of
// label values: the configured namespaces, or else the first limit
// namespaces seen; every other namespace is counted as "other". First seen,
// not busiest: a counter cannot give its label back, and the namespaces
// that matter are usually the ones present from the start.
type namespaceCounter struct {
	vec   *prometheus.CounterVec
	fixed bool
	limit int

	mu    sync.Mutex
	known map[string]struct{}
}

// newNamespaceCounter counts under names, or the first limit seen; the
// caller registers its vec.
func newNamespaceCounter(names []string, limit int) *namespaceCounter {
	c := &namespaceCounter{
		vec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_namespace_requests_total",
			Help: "API requests that reached a lock shard, by resource namespace (the name up to the first ':'; bounded, the rest as \"other\") and operation.",
		}, []string{"namespace", "op"}),
		fixed: len(names) > 0,
		limit: limit,
		known: make(map[string]struct{}, len(names)),
	}
	for _, n := range names {
		c.known[n] = struct{}{}
	}
	return c
}

// count adds one request of op on resource.
func (c *namespaceCounter) count(resource, op string) {
	c.vec.WithLabelValues(c.label(namespaceOf(resource)), op).Inc()
}

// label is the label value namespace ns is counted under.
func (c *namespaceCounter) label(ns string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.known[ns]; ok {
		return ns
	}
	if c.fixed || len(c.known) >= c.limit {
		return otherNamespace
	}
	c.known[ns] = struct{}{}
	return ns
}

// namespaceOf is resource's namespace: its name up to the first separator.
func namespaceOf(resource string) string {
	ns, _, ok := strings.Cut(resource, namespaceSep)
	if !ok || ns == "" {
		return noNamespace
	}
	return ns
}
