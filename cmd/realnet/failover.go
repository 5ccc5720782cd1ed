package main

import (
	"context"
	"fmt"
	"io"

	"github.com/lockstep/lockstep/scenarios/realnet"
)

// failover is a stub until the measurement lands.
func failover(ctx context.Context, o options, bin string, w io.Writer) int {
	_, _, _ = ctx, o, bin
	fmt.Fprintln(w, "realnet: -failover not built yet")
	_ = realnet.DefaultResultsDir
	return exitCrash
}
