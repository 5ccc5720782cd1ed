//go:build !wasip1

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/scenarios"
	"github.com/lockstep/lockstep/sim/wasmhost"
)

// prepareGuest fills the build and machine-code caches. Worth doing in a
// process without the race detector: under it, wazero compiles the 23 MB
// guest about 10x slower (~100 CPU-s instead of ~10).
func prepareGuest(ctx context.Context, o options, diag io.Writer) int {
	start := time.Now()
	host, err := newGuestHost(ctx, o, diag)
	if err != nil {
		fmt.Fprintln(diag, "locksim:", err)
		return scenarios.ExitCrash
	}
	fmt.Fprintf(diag, "locksim: deterministic guest ready in %s (module load and compile %s)\n",
		time.Since(start).Round(time.Millisecond), host.Compile.Round(time.Millisecond))
	return scenarios.ExitOK
}

// guestHosts holds this process's compiled guests by -wasm value ("" for
// the build of this checkout), kept for the process's life: compiling even
// from the cache costs about a second, and tests run many sweeps.
var guestHosts struct {
	sync.Mutex
	byModule map[string]*wasmhost.Host
}

// newGuestHost returns the compiled guest: locksim.wasm from -wasm, or a
// wasip1 build of this checkout cached by source hash, compiled with
// wazero's machine code cached between processes.
func newGuestHost(ctx context.Context, o options, diag io.Writer) (*wasmhost.Host, error) {
	guestHosts.Lock()
	defer guestHosts.Unlock()
	if h := guestHosts.byModule[o.wasm]; h != nil {
		return h, nil
	}
	h, err := compileGuest(ctx, o, diag)
	if err != nil {
		return nil, err
	}
	if guestHosts.byModule == nil {
		guestHosts.byModule = map[string]*wasmhost.Host{}
	}
	guestHosts.byModule[o.wasm] = h
	return h, nil
}

func compileGuest(ctx context.Context, o options, diag io.Writer) (*wasmhost.Host, error) {
	cache, err := cacheDir()
	if err != nil {
		return nil, err
	}
	module := o.wasm
	if module == "" {
		var tags []string
		if len(node.Bugs) > 0 {
			tags = append(tags, "lockstep_bugs")
		}
		module, err = wasmhost.Build(ctx, wasmhost.BuildOptions{
			Dir: ".", Package: "github.com/lockstep/lockstep/cmd/locksim", Tags: tags,
			CacheDir: filepath.Join(cache, "wasm"), Log: diag,
		})
		if err != nil {
			return nil, fmt.Errorf("%w (run from the repository, or build it and give -wasm)", err)
		}
	}
	return wasmhost.New(ctx, wasmhost.Options{ModulePath: module, CacheDir: filepath.Join(cache, "wazero")})
}

// cacheDir is where built guests and compiled machine code are kept.
func cacheDir() (string, error) {
	if d := os.Getenv("LOCKSIM_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "lockstep-cache"), nil
	}
	return filepath.Join(d, "lockstep"), nil
}
