package main

import (
	"os"
	"runtime/debug"
)

// nativeGOGC is the collector's target for native runs when GOGC is not
// set. A run allocates ~75 MB (hashicorp/raft alone allocates a
// MaxAppendEntries-sized slice per AppendEntries and per apply batch) on
// a live heap of a few MB, so at the default of 100 the collector ran
// every few milliseconds of CPU; 400, as in the guest (guestGOGC), costs
// ~20 MB more memory. Native runs do not replay exactly anyway, so the
// setting changes their speed, not what they check.
const nativeGOGC = 400

// tuneNativeGC sets nativeGOGC unless the environment chose a GOGC.
func tuneNativeGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(nativeGOGC)
	}
}
