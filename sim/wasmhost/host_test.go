package wasmhost

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// guestHost builds testdata/guest for wasip1 and compiles it, or skips
// where the toolchain cannot build wasip1.
func guestHost(t *testing.T) *Host {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to build the test guest")
	}
	if ports, err := exec.Command(goTool, "tool", "dist", "list").Output(); err != nil || !bytes.Contains(ports, []byte("wasip1/wasm")) {
		t.Skipf("this Go toolchain cannot build for wasip1/wasm (go tool dist list: %v)", err)
	}
	// A lasting cache: under -race wazero compiles ~10x slower.
	cache := t.TempDir()
	if d, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(d, "lockstep", "wasmhost-test")
	}
	ctx := context.Background()
	module, err := Build(ctx, BuildOptions{Dir: ".", Package: "./testdata/guest", CacheDir: filepath.Join(cache, "wasm")})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(ctx, Options{ModulePath: module, CacheDir: filepath.Join(cache, "wazero")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	return h
}

func runGuest(t *testing.T, h *Host, key string, args ...string) (string, uint32) {
	t.Helper()
	var out bytes.Buffer
	code, _, err := h.Run(context.Background(), Run{Key: key, Args: append([]string{"guest"}, args...), Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return out.String(), code
}

// TestGuestIsAFunctionOfItsKey: goal — everything a Go guest can draw
// entropy or time from (crypto/rand, the global math/rand, map order,
// select, the clock, sleeping) is fixed by the run's key. Method: run a
// guest printing each of them twice with one key and once with another;
// also check that a sleep costs no host time and the exit code passes.
func TestGuestIsAFunctionOfItsKey(t *testing.T) {
	h := guestHost(t)
	a, _ := runGuest(t, h, "seed-1")
	b, _ := runGuest(t, h, "seed-1")
	other, _ := runGuest(t, h, "seed-2")
	if a != b {
		t.Errorf("same key, different output:\n%s\n%s", a, b)
	}
	lines := strings.Split(strings.TrimSpace(a), "\n")
	for _, line := range lines[:2] { // crypto/rand, math/rand
		if strings.Contains(other, line) {
			t.Errorf("another key printed the same %q", line)
		}
	}
	// Map order and select have few outcomes: one of them must differ.
	if strings.Contains(other, lines[2]) && strings.Contains(other, lines[3]) {
		t.Errorf("another key gave the same map order and select picks:\n%s\n%s", a, other)
	}
	if !strings.Contains(a, "now 2026-01-01T00:00:00") || !strings.Contains(a, "slept 1.0") {
		t.Errorf("guest clock does not start at the epoch or sleep on it:\n%s", a)
	}
	if _, code := runGuest(t, h, "seed-1", "exit"); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
}

// TestFakeClock: goal — the guest's clock only moves forward, by a fixed
// step per read and by the slept amount. Method: read, sleep, read.
func TestFakeClock(t *testing.T) {
	var c fakeClock
	a := c.nanotime()
	c.nanosleep(int64(1000 * clockStep))
	b := c.nanotime()
	if got, want := b-a, int64(1001*clockStep); got != want {
		t.Errorf("clock moved %d ns across a sleep of 1000 steps, want %d", got, want)
	}
	c.nanosleep(-5)
	if c.nanotime() <= b {
		t.Errorf("clock did not move forward")
	}
}
