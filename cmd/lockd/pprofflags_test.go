package main

import "testing"

// Goal: --pprof-addr is off unless given, and refuses any address a remote
// machine could reach, on both forms that take it.
func TestPprofAddrFlag(t *testing.T) {
	base := []string{"--id", "n1", "--raft-addr", "127.0.0.1:7170", "--data-dir", t.TempDir(), "--peers", "n1=127.0.0.1:7170", "--insecure"}
	opts, err := parseMember(base)
	if err != nil || opts.PprofAddr != "" {
		t.Fatalf("member without --pprof-addr: %q %v, want none", opts.PprofAddr, err)
	}
	for _, ok := range []string{"127.0.0.1:6060", "[::1]:6060", "localhost:6060"} {
		if opts, err := parseMember(append(base, "--pprof-addr", ok)); err != nil || opts.PprofAddr != ok {
			t.Errorf("member --pprof-addr %s: %q %v", ok, opts.PprofAddr, err)
		}
		if c, err := parseDev([]string{"--pprof-addr", ok}); err != nil || c.pprof.addr != ok {
			t.Errorf("dev --pprof-addr %s: %q %v", ok, c.pprof.addr, err)
		}
	}
	for _, bad := range []string{"0.0.0.0:6060", "10.0.0.5:6060", ":6060", "6060", "example.com:6060"} {
		if _, err := parseMember(append(base, "--pprof-addr", bad)); err == nil {
			t.Errorf("member --pprof-addr %s accepted", bad)
		}
		if _, err := parseDev([]string{"--pprof-addr", bad}); err == nil {
			t.Errorf("dev --pprof-addr %s accepted", bad)
		}
	}
}
