package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// Goal: the observability flags reach the member's options (endpoint,
// sample, namespace labels), tracing is off without them, and a bad value
// is a wrong command line (exit 2), for members, dev and the gateway.
func TestObservabilityFlags(t *testing.T) {
	base := []string{"--id", "n1", "--raft-addr", "127.0.0.1:7170", "--data-dir", "d", "--peers", "n1=127.0.0.1:7170", "--insecure"}
	opts, err := parseMember(base)
	if err != nil || opts.Trace.Endpoint != "" || opts.Trace.Sample != 1 || opts.Service.Namespaces != nil {
		t.Fatalf("defaults: %+v %v", opts.Trace, err)
	}
	opts, err = parseMember(append(base, "--otlp-endpoint", "collector:4318", "--trace-sample", "0.25",
		"--metrics-namespaces", "billing, jobs", "--metrics-namespace-limit", "5"))
	if err != nil || opts.Trace.Endpoint != "collector:4318" || opts.Trace.Sample != 0.25 ||
		!slices.Equal(opts.Service.Namespaces, []string{"billing", "jobs"}) || opts.Service.NamespaceLimit != 5 {
		t.Fatalf("set: trace %+v, namespaces %q limit %d, err %v", opts.Trace, opts.Service.Namespaces, opts.Service.NamespaceLimit, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(base, "--trace-sample", "1.5"), "must be in 0..1"},
		{append(base, "--trace-sample", "half"), "not a number"},
		{append(base, "--otlp-endpoint", "ftp://c:1"), "otlp endpoint"},
		{[]string{"dev", "--metrics-namespace-limit", "0"}, "metrics-namespace-limit"},
		{[]string{"gateway", "--join", "127.0.0.1:7070", "--trace-sample", "-1", "--insecure"}, "must be in 0..1"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("lockd %v: exit %d, stderr %q, want 2 with %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
