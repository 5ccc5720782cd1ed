package main

import (
	"errors"
	"flag"
	"strings"

	"github.com/lockstep/lockstep/core/tracing"
)

// observeArgs are the observability flags every form of lockd takes:
// where traces go and which namespaces get their own metrics label.
type observeArgs struct {
	trace      tracing.Options
	namespaces string
	nsLimit    int
}

func (a *observeArgs) register(fs *flag.FlagSet) {
	registerTrace(fs, &a.trace)
	fs.StringVar(&a.namespaces, "metrics-namespaces", "", "namespaces (resource prefix before ':') counted under their own label in lockstep_namespace_requests_total, comma-separated; empty: the first --metrics-namespace-limit seen")
	fs.IntVar(&a.nsLimit, "metrics-namespace-limit", 20, "namespaces with their own label when --metrics-namespaces is empty; the rest count as \"other\"")
}

// registerTrace adds --otlp-endpoint and --trace-sample, filling o.
func registerTrace(fs *flag.FlagSet, o *tracing.Options) {
	*o = tracing.Options{Sample: 1, Env: true}
	fs.StringVar(&o.Endpoint, "otlp-endpoint", "", "export OpenTelemetry traces over OTLP/HTTP to this collector (http://host:4318); empty: OTEL_EXPORTER_OTLP_ENDPOINT if set, else no tracing")
	fs.Float64Var(&o.Sample, "trace-sample", o.Sample, "fraction 0..1 of new traces kept (a request with a traceparent follows its caller's decision)")
}

// check validates the flags without connecting to a collector.
func (a *observeArgs) check() error {
	if a.nsLimit < 1 {
		return errors.New("--metrics-namespace-limit must be >= 1")
	}
	return a.trace.Validate()
}

// namespaceList is --metrics-namespaces split.
func (a *observeArgs) namespaceList() []string {
	var out []string
	for _, n := range strings.Split(a.namespaces, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
