// Package otlp sets up a tracing.Tracer that exports over OTLP/HTTP: kept
// apart from core/tracing so that the node (and the simulator, built for
// wasip1) never links the SDK and the exporter.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lockstep/lockstep/core/tracing"
)

// ErrConfig marks unusable tracing settings.
var ErrConfig = errors.New("invalid tracing config")

// Options say where spans go. No endpoint (flag or environment) means no
// tracing at all.
type Options struct {
	// Endpoint is the OTLP/HTTP collector: http://host:4318, https://...,
	// or host:port (plain HTTP). The path defaults to /v1/traces.
	Endpoint string
	// Env lets an empty Endpoint fall back to the standard
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and OTEL_EXPORTER_OTLP_ENDPOINT
	// (read by the exporter itself). Off in the zero Options, so a test
	// never exports because of its environment.
	Env bool
	// Sample is the fraction of new traces kept, 0..1. A request that
	// arrives with a traceparent follows its caller's decision instead, so
	// a trace is whole or absent.
	Sample float64
	// Service names the process in the exported spans (service.name).
	Service string
	// Instance tells processes of one service apart (service.instance.id).
	Instance string
	// Logger, when set, gets the exporter's errors (an unreachable
	// collector) at warn instead of the standard log package. OpenTelemetry
	// has one error handler per process: the last Setup's logger wins.
	Logger *slog.Logger
}

// envEndpoints are the standard variables that configure the exporter.
var envEndpoints = []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"}

// Enabled reports whether o names an endpoint, itself or in the environment.
func (o Options) Enabled() bool {
	if o.Endpoint != "" {
		return true
	}
	if !o.Env {
		return false
	}
	for _, v := range envEndpoints {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// Validate checks o without connecting anywhere.
func (o Options) Validate() error {
	if o.Sample < 0 || o.Sample > 1 || o.Sample != o.Sample {
		return fmt.Errorf("%w: trace sample %v must be in 0..1", ErrConfig, o.Sample)
	}
	_, err := endpointOptions(o.Endpoint)
	return err
}

// Setup starts an OTLP/HTTP exporter and returns a Tracer on it and the
// shutdown that flushes the spans still buffered. Without an endpoint it
// returns a nil Tracer (off) and a no-op shutdown.
func Setup(ctx context.Context, o Options) (*tracing.Tracer, func(context.Context) error, error) {
	none := func(context.Context) error { return nil }
	if err := o.Validate(); err != nil {
		return nil, none, err
	}
	if !o.Enabled() {
		return nil, none, nil
	}
	opts, err := endpointOptions(o.Endpoint)
	if err != nil {
		return nil, none, err
	}
	if o.Logger != nil {
		logger := o.Logger
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("trace export failed", "err", err) }))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, none, fmt.Errorf("otlp exporter: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", o.Service)}
	if o.Instance != "" {
		attrs = append(attrs, attribute.String("service.instance.id", o.Instance))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(Sampler(o.Sample)),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
	)
	return tracing.New(tp), tp.Shutdown, nil
}

// Sampler keeps fraction of the traces that start here and follows the
// caller's decision for the rest.
func Sampler(fraction float64) sdktrace.Sampler {
	return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(fraction))
}

// endpointOptions turns the --otlp-endpoint value into exporter options.
func endpointOptions(endpoint string) ([]otlptracehttp.Option, error) {
	if endpoint == "" {
		return nil, nil
	}
	raw := endpoint
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: otlp endpoint %q: want http(s)://host:port[/path] or host:port", ErrConfig, endpoint)
	}
	path := u.Path
	if path == "" || path == "/" {
		path = "/v1/traces"
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host), otlptracehttp.WithURLPath(path)}
	if u.Scheme == "http" {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	return opts, nil
}

// Ensure returns t when set, else what Setup(o) gives: a component takes
// a Tracer from its caller (tests, lockd dev) or builds its own from
// flags. The shutdown is a no-op for a Tracer passed in.
func Ensure(ctx context.Context, t *tracing.Tracer, o Options) (*tracing.Tracer, func(context.Context) error, error) {
	if t != nil {
		return t, func(context.Context) error { return nil }, nil
	}
	return Setup(ctx, o)
}
