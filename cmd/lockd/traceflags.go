package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstep/lockstep/core/tracing/otlp"
)

// observeArgs are the observability flags every form of lockd takes:
// where traces go and which namespaces get their own metrics label.
type observeArgs struct {
	trace      otlp.Options
	namespaces string
	nsLimit    int
}

func (a *observeArgs) register(fs *flag.FlagSet) {
	registerTrace(fs, &a.trace)
	fs.StringVar(&a.namespaces, "metrics-namespaces", "", "namespaces (resource prefix before ':') counted under their own label in lockstep_namespace_requests_total, comma-separated; empty: the first --metrics-namespace-limit seen")
	fs.IntVar(&a.nsLimit, "metrics-namespace-limit", 20, "namespaces with their own label when --metrics-namespaces is empty; the rest count as \"other\"")
}

// registerTrace adds --otlp-endpoint and --trace-sample, filling o; a bad
// value fails the parse, like any malformed flag.
func registerTrace(fs *flag.FlagSet, o *otlp.Options) {
	*o = otlp.Options{Sample: 1, Env: true}
	fs.Func("otlp-endpoint", "export OpenTelemetry traces over OTLP/HTTP to this collector (http://host:4318); unset: OTEL_EXPORTER_OTLP_ENDPOINT if set, else no tracing", func(v string) error {
		o.Endpoint = v
		return o.Validate()
	})
	fs.Func("trace-sample", "fraction 0..1 of new traces kept; a request with a traceparent follows its caller's decision (default 1)", func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number: %q", v)
		}
		o.Sample = f
		return o.Validate()
	})
}

// check refuses a namespace limit that would count everything as other.
func (a *observeArgs) check() error {
	if a.nsLimit < 1 {
		return errors.New("--metrics-namespace-limit must be >= 1")
	}
	return nil
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
