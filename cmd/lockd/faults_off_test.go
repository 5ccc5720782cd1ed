//go:build !lockstep_faults

package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

// TestFaultFlagsRefused: goal — a production lockd never runs with a test
// clock, a trace or a bug mode. Method: parse a member command line with
// each fault flag, and a gateway command line with --fault-via, and
// expect errNoFaults.
func TestFaultFlagsRefused(t *testing.T) {
	base := []string{"--id", "n1", "--raft-addr", "127.0.0.1:7170", "--data-dir", t.TempDir(),
		"--peers", "n1=127.0.0.1:7170", "--insecure"}
	for _, flag := range []string{"--fault-trace", "--fault-control", "--fault-bug"} {
		_, err := parseMember(append(base, flag, "x"))
		if !errors.Is(err, errNoFaults) {
			t.Errorf("%s: err %v, want errNoFaults", flag, err)
		}
	}
	if _, err := parseMember(base); err != nil {
		t.Fatalf("plain member refused: %v", err)
	}
	gw := []string{"--join", "127.0.0.1:7070", "--insecure"}
	if _, err := parseGateway(append(gw, "--fault-via", "127.0.0.1:7070=127.0.0.1:9000")); !errors.Is(err, errNoFaults) {
		t.Errorf("gateway --fault-via: err %v, want errNoFaults", err)
	}
	if _, err := parseGateway(gw); err != nil {
		t.Fatalf("plain gateway refused: %v", err)
	}
}

// TestHelpListsNoFaultFlags: goal — the fault flags exist only in a
// lockstep_faults build: a production lockd's help lists none of them,
// for any form. Method: lockd -h, and every form's flag set.
func TestHelpListsNoFaultFlags(t *testing.T) {
	var stdout bytes.Buffer
	if code := run([]string{"-h"}, &stdout, io.Discard); code != 0 || strings.Contains(stdout.String(), "-fault-") {
		t.Errorf("lockd -h: exit %d, lists fault flags:\n%s", code, grepLines(stdout.String(), "-fault-"))
	}
	for _, fs := range flagSets() {
		fs.VisitAll(func(f *flag.Flag) {
			if strings.HasPrefix(f.Name, "fault-") {
				t.Errorf("%s has --%s", fs.Name(), f.Name)
			}
		})
	}
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
