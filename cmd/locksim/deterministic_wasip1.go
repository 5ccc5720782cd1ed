//go:build wasip1

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/lockstep/lockstep/scenarios"
)

// The guest never hosts another guest: these are the host's entry points,
// reduced to what a guest can do.

func runDeterministic(_ context.Context, _ options, _, diag io.Writer) int {
	fmt.Fprintln(diag, "locksim: -deterministic inside the wasm guest: give -guest")
	return scenarios.ExitCrash
}

func recheckReplay(_ context.Context, o options, w, _ io.Writer) int {
	return recheck(w, o.check)
}

func prepareGuest(_ context.Context, _ options, diag io.Writer) int {
	fmt.Fprintln(diag, "locksim: -prepare inside the wasm guest")
	return scenarios.ExitCrash
}
