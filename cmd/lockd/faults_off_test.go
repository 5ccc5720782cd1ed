//go:build !lockstep_faults

package main

import (
	"errors"
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
