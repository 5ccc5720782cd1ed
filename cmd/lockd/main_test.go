package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestHelpExitsZeroAndShowsBothForms: goal — asking for help is not an
// error: -h, --help and help print a usage naming both forms (a member and
// lockd dev) on stdout and exit 0, for lockd and for lockd dev. Method: call
// run with each spelling and inspect the exit code and both streams.
func TestHelpExitsZeroAndShowsBothForms(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"dev", "-h"}, {"dev", "--help"}} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		out := stdout.String()
		if code != 0 || !strings.Contains(out, "lockd dev") || !strings.Contains(out, "--peers") ||
			!strings.Contains(out, "-max-resources") {
			t.Errorf("lockd %v: exit %d, stdout %q, want 0 and a usage naming both forms and the flags", args, code, out)
		}
		if stderr.Len() != 0 {
			t.Errorf("lockd %v wrote to stderr: %q", args, stderr.String())
		}
	}
}

// TestBadCommandLineExitsTwo: goal — a wrong command line is reported once,
// with the usage, on stderr and exit status 2 (not a logged runtime
// failure). Method: an unknown flag, missing required flags, an invalid
// limit.
func TestBadCommandLineExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "flag provided but not defined"},
		{[]string{"dev", "--nope"}, "flag provided but not defined"},
		{[]string{"--id", "n1"}, "are required"},
		{[]string{"dev", "--max-resources", "0"}, "MaxResources"},
		{[]string{"dev", "--read-timeout", "0s"}, "read-timeout"},
		{[]string{"dev", "extra"}, "unexpected argument"},
		{[]string{"--id", "n1", "--raft-addr", "127.0.0.1:7170", "--data-dir", "d", "--peers", "n1=127.0.0.1:7170",
			"--advertise-http", "nohost"}, "--advertise-http"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) || !strings.Contains(stderr.String(), "Usage") {
			t.Errorf("lockd %v: exit %d, stderr %q, want 2 with %q and the usage", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestLimitFlagsReachTheConfig: goal — the state machine's bounds (lock
// table size, queue length, wait and TTL limits) and the HTTP limits can be
// set from the command line. Method: parse a member command line with
// every limit flag and read the resulting lockd.Options.
func TestLimitFlagsReachTheConfig(t *testing.T) {
	opts, err := parseMember([]string{
		"--id", "n1", "--raft-addr", "127.0.0.1:7170", "--data-dir", "d", "--peers", "n1=127.0.0.1:7170@127.0.0.1:7070", "--insecure",
		"--max-resources", "5", "--max-waiters", "7", "--max-wait", "1m", "--min-ttl", "10ms", "--max-ttl", "2m",
		"--max-in-flight", "3", "--read-timeout", "1s", "--write-timeout", "2s", "--idle-timeout", "3s",
		"--request-timeout", "4s",
	})
	if err != nil {
		t.Fatal(err)
	}
	l, v, s := opts.Lock, opts.Service, opts.Server
	if l.MaxResources != 5 || l.MaxWaitersPerQueue != 7 || l.MaxWait != time.Minute || l.MinTTL != 10*time.Millisecond ||
		l.MaxTTL != 2*time.Minute {
		t.Errorf("lock config = %+v", l)
	}
	if v.MaxInFlight != 3 || s.ReadTimeout != time.Second || s.WriteTimeout != 2*time.Second ||
		s.IdleTimeout != 3*time.Second || v.RequestTimeout != 4*time.Second {
		t.Errorf("service config = %+v, server config = %+v", v, s)
	}
}

// TestDevTakesTheLimitFlags: goal — lockd dev accepts the same limit flags
// as a member. Method: parse a dev command line and read its config.
func TestDevTakesTheLimitFlags(t *testing.T) {
	c, err := parseDev([]string{"--max-resources", "9", "--max-waiters", "4", "--max-in-flight", "8", "--max-wait", "30s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.settings.limits.lock.MaxResources != 9 || c.settings.limits.lock.MaxWaitersPerQueue != 4 || c.settings.limits.service.MaxInFlight != 8 ||
		c.settings.limits.lock.MaxWait != 30*time.Second {
		t.Fatalf("dev limits = %+v", c.settings.limits)
	}
}

// TestPlacementFlagsReachTheOptions: goal — the address a member publishes
// and its leader-spread interval can be set from the command line. Method:
// parse a member command line with both and read the lockd.Options.
func TestPlacementFlagsReachTheOptions(t *testing.T) {
	opts, err := parseMember([]string{"--id", "n1", "--raft-addr", "127.0.0.1:7170", "--data-dir", "d",
		"--peers", "n1=127.0.0.1:7170", "--advertise-http", "127.0.0.1:9070", "--spread-interval", "500ms", "--insecure",
		"--deadlock-interval", "250ms"})
	if err != nil {
		t.Fatal(err)
	}
	if opts.AdvertiseHTTP != "127.0.0.1:9070" || opts.SpreadInterval != 500*time.Millisecond || opts.DeadlockInterval != 250*time.Millisecond {
		t.Fatalf("advertise %q, spread %s, deadlock interval %s", opts.AdvertiseHTTP, opts.SpreadInterval, opts.DeadlockInterval)
	}
}
