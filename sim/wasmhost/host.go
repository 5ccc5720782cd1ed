// Package wasmhost runs a Go program compiled for wasip1 as a pure function
// of its arguments: every byte of entropy and every clock reading the guest
// sees is derived from a replay key, and the guest has no threads, so two
// runs with the same key and arguments execute the same instructions and
// write the same bytes. lockstep uses it to make simulator runs replay
// exactly, scheduler and hashicorp/raft's global math/rand included.
package wasmhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// Options configure a Host.
type Options struct {
	// ModulePath is the wasip1 module to run.
	ModulePath string
	// CacheDir keeps wazero's compiled machine code between processes, one
	// subdirectory per module content, the few most recently used kept; ""
	// compiles in memory every time (seconds for a large module).
	CacheDir string
}

// Host holds one compiled module and instantiates it once per run. It is
// safe for concurrent use: runs do not share memory, clocks or entropy.
type Host struct {
	runtime wazero.Runtime
	module  wazero.CompiledModule
	// Compile is how long loading and compiling the module took.
	Compile time.Duration
}

// New compiles the module at opts.ModulePath.
func New(ctx context.Context, opts Options) (*Host, error) {
	start := time.Now()
	code, err := os.ReadFile(opts.ModulePath)
	if err != nil {
		return nil, fmt.Errorf("wasmhost: %w", err)
	}
	config := wazero.NewRuntimeConfig()
	if opts.CacheDir != "" {
		sum := sha256.Sum256(code)
		dir := filepath.Join(opts.CacheDir, hex.EncodeToString(sum[:8]))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("wasmhost: compilation cache: %w", err)
		}
		touch(dir)
		prune(opts.CacheDir, "*")
		cache, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return nil, fmt.Errorf("wasmhost: compilation cache: %w", err)
		}
		config = config.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, config)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasmhost: wasi: %w", err)
	}
	mod, err := rt.CompileModule(ctx, code)
	if err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasmhost: compile %s: %w", opts.ModulePath, err)
	}
	return &Host{runtime: rt, module: mod, Compile: time.Since(start)}, nil
}

// Close releases the runtime and the compiled module.
func (h *Host) Close(ctx context.Context) error {
	return h.runtime.Close(ctx)
}

// Run is one execution of the guest.
type Run struct {
	// Key seeds the guest's entropy: runs with equal Key, Args, Env and
	// mounted contents behave identically.
	Key  string
	Args []string // Args[0] is the program name
	// Env is the guest's environment, in this order (the order is part of
	// what the guest sees).
	Env    [][2]string
	Stdout io.Writer
	Stderr io.Writer
	// Mounts map a guest path to a host directory, read-write.
	Mounts [][2]string
}

// Timing is where a run's host time went.
type Timing struct {
	// Instantiate: memory, imports and the module's data segments.
	Instantiate time.Duration
	// Run: the guest's _start, from entry to exit.
	Run time.Duration
}

// Run executes one guest to completion and returns its exit code. The
// guest's clock starts at a fixed epoch and moves only as the guest reads
// or sleeps on it.
func (h *Host) Run(ctx context.Context, r Run) (uint32, Timing, error) {
	var timing Timing
	clock := &fakeClock{}
	fsConfig := wazero.NewFSConfig()
	for _, m := range r.Mounts {
		abs, err := filepath.Abs(m[1])
		if err != nil {
			return 0, timing, fmt.Errorf("wasmhost: mount %s: %w", m[1], err)
		}
		fsConfig = fsConfig.WithDirMount(abs, m[0])
	}
	config := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(). // _start is called below, to time it apart
		WithArgs(r.Args...).
		WithStdout(r.Stdout).
		WithStderr(r.Stderr).
		WithFSConfig(fsConfig).
		WithRandSource(randSource(r.Key)).
		WithWalltime(clock.walltime, sys.ClockResolution(1)).
		WithNanotime(clock.nanotime, sys.ClockResolution(1)).
		WithNanosleep(clock.nanosleep).
		WithOsyield(func() {})
	for _, kv := range r.Env {
		config = config.WithEnv(kv[0], kv[1])
	}
	start := time.Now()
	mod, err := h.runtime.InstantiateModule(experimental.WithMemoryAllocator(ctx, newLinearMemory()), h.module, config)
	timing.Instantiate = time.Since(start)
	if err != nil {
		return 0, timing, fmt.Errorf("wasmhost: instantiate: %w", err)
	}
	defer mod.Close(ctx)
	entry := mod.ExportedFunction("_start")
	if entry == nil {
		return 0, timing, fmt.Errorf("wasmhost: %w", errNoStart)
	}
	start = time.Now()
	_, err = entry.Call(ctx)
	timing.Run = time.Since(start)
	var exit *sys.ExitError
	switch {
	case err == nil:
		return 0, timing, nil
	case errors.As(err, &exit):
		return exit.ExitCode(), timing, nil
	default:
		return 0, timing, fmt.Errorf("wasmhost: run %v: %w", r.Args, err)
	}
}

// errNoStart: the module is not a WASI command (GOOS=wasip1 main package).
var errNoStart = errors.New("module exports no _start")
