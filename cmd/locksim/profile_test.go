package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
)

// Goal: -cpuprofile and -memprofile are native-only flags. Method:
// parseFlags with each in a native and in a deterministic command line.
func TestProfileFlagsNativeOnly(t *testing.T) {
	for _, flag := range []string{"-cpuprofile", "-memprofile"} {
		if _, err := parseFlags([]string{"-scenario", "leaderCrash", flag, "p.out"}); err != nil {
			t.Errorf("native %s: %v", flag, err)
		}
		if _, err := parseFlags([]string{"-deterministic", "-scenario", "leaderCrash", flag, "p.out"}); err == nil {
			t.Errorf("-deterministic %s: accepted, want an error", flag)
		}
	}
}

// Goal: the profiles are written when the run stops. Method: start both,
// allocate and spin a little, stop, and check each file is a gzipped
// pprof profile.
func TestStartProfilesWritesBoth(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	stop, err := startProfiles(cpu, mem)
	if err != nil {
		t.Fatal(err)
	}
	var sink [][]byte
	for i := range 1000 {
		sink = append(sink, make([]byte, 1024+i))
	}
	_ = sink
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{cpu, mem} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s: %d bytes, not a gzipped pprof profile", filepath.Base(f), len(b))
		}
	}
}

// Goal: a native run takes one thread and GOGC 400 unless the
// environment says otherwise. Method: tuneNativeRuntime with neither
// variable set, then with both set, restoring the process's settings.
func TestTuneNativeRuntime(t *testing.T) {
	procs, gc := runtime.GOMAXPROCS(0), debug.SetGCPercent(100)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs); debug.SetGCPercent(gc) })
	for _, v := range []string{"GOGC", "GOMAXPROCS"} {
		if old, ok := os.LookupEnv(v); ok {
			t.Cleanup(func() { os.Setenv(v, old) })
		}
		os.Unsetenv(v)
	}
	runtime.GOMAXPROCS(2)
	tuneNativeRuntime()
	if got := runtime.GOMAXPROCS(0); got != nativeGOMAXPROCS {
		t.Errorf("GOMAXPROCS %d, want %d", got, nativeGOMAXPROCS)
	}
	if got := debug.SetGCPercent(100); got != nativeGOGC {
		t.Errorf("GOGC %d, want %d", got, nativeGOGC)
	}
	t.Setenv("GOGC", "100")
	t.Setenv("GOMAXPROCS", "2")
	runtime.GOMAXPROCS(2)
	tuneNativeRuntime()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("GOMAXPROCS set in the environment: got %d, want 2", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set in the environment: got %d, want 100", got)
	}
}
