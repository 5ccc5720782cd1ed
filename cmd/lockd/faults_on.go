//go:build lockstep_faults

package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/lockstep/lockstep/core/faultctl"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/node"
)

// applyFaults installs the test-only fault surface on the member: the
// controllable clock (served on its own listener), the trace file and the
// bug mode. They live as long as the process: a test kills it.
func applyFaults(a *faultArgs, opts *lockd.Options) error {
	clock := faultctl.NewClock()
	var trace *faultctl.TraceWriter
	if a.trace != "" {
		w, err := faultctl.OpenTrace(a.trace, opts.ID)
		if err != nil {
			return err
		}
		trace = w
	}
	if a.control != "" {
		ln, err := net.Listen("tcp", a.control)
		if err != nil {
			return fmt.Errorf("fault control listen: %w", err)
		}
		srv := &http.Server{Handler: faultctl.Handler(clock), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				slog.Error("fault control stopped", "err", err)
			}
		}()
	}
	bug := node.Bug(a.bug)
	prev := opts.Tune
	opts.Tune = func(c *node.Config) {
		if prev != nil {
			prev(c)
		}
		c.Clock, c.Bug = clock, bug
		if trace != nil {
			c.OnEvent, c.OnApply, c.OnWake = trace.Event, trace.Apply, trace.Wake
		}
	}
	return nil
}
