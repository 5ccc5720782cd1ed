package main

import "testing"

// Goal: the health listener is off unless --health-addr names one, and a
// malformed address is a command-line error. Method: parse member command
// lines and read the options.
func TestHealthFlags(t *testing.T) {
	base := []string{"--id", "n1", "--raft-addr", "127.0.0.1:7170", "--data-dir", "d", "--peers", "n1=127.0.0.1:7170", "--insecure"}
	opts, err := parseMember(base)
	if err != nil || opts.HealthAddr != "" {
		t.Fatalf("member without --health-addr: %q %v, want none", opts.HealthAddr, err)
	}
	opts, err = parseMember(append(base, "--health-addr", "10.0.0.5:7080"))
	if err != nil || opts.HealthAddr != "10.0.0.5:7080" {
		t.Fatalf("member --health-addr: %q %v", opts.HealthAddr, err)
	}
	if _, err := parseMember(append(base, "--health-addr", "7080")); err == nil {
		t.Fatal("--health-addr 7080 (no host:port) accepted")
	}
}
