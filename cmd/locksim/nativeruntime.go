package main

import (
	"os"
	"runtime"
	"runtime/debug"
)

// nativeGOGC is the collector's target for native runs when GOGC is not
// set. A run allocates ~75 MB (hashicorp/raft alone allocates a
// MaxAppendEntries-sized slice per AppendEntries and per apply batch) on
// a live heap of a few MB, so at the default of 100 the collector ran
// every few milliseconds of CPU; 400, as in the guest (guestGOGC), costs
// ~20 MB more memory.
const nativeGOGC = 400

// nativeGOMAXPROCS is how many threads run Go code in a native run when
// GOMAXPROCS is not set. A run's goroutines hand work to each other
// message by message, so a second thread found almost nothing to run in
// parallel (wall time was ~CPU time) and added cross-thread wake-ups and
// lock contention: one thread did the same runs in 20-50 % less CPU
// (EXPERIMENTS.md, section 5), and leaves the other cores to other runs.
const nativeGOMAXPROCS = 1

// tuneNativeRuntime applies nativeGOGC and nativeGOMAXPROCS unless the
// environment chose otherwise. Native runs do not replay exactly anyway
// (goroutine scheduling is free), so these change their speed, not what
// they check; the wasm guest has settings of its own (guestEnv).
func tuneNativeRuntime() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(nativeGOGC)
	}
	if _, ok := os.LookupEnv("GOMAXPROCS"); !ok {
		runtime.GOMAXPROCS(nativeGOMAXPROCS)
	}
}
