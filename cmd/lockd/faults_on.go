//go:build lockstep_faults

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/lockstep/lockstep/core/faultctl"
	"github.com/lockstep/lockstep/core/gateway"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/node"
)

// faultArgs are the test-only flags of a lockstep_faults build; a
// production build has none of them (faults_off.go).
type faultArgs struct {
	// trace is the file every applied entry and event is appended to.
	trace string
	// control is the address of the clock control listener.
	control string
	// bug is a server bug mode (needs the lockstep_bugs tag as well).
	bug string
}

func (a *faultArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&a.trace, "fault-trace", "", "test builds only: append applied entries and events to this file")
	fs.StringVar(&a.control, "fault-control", "", "test builds only: serve clock control on this address")
	fs.StringVar(&a.bug, "fault-bug", "", "test builds only: turn on a server bug mode (lockstep_bugs)")
}

func (a *faultArgs) set() bool { return a.trace != "" || a.control != "" || a.bug != "" }

// gatewayFaultArgs are the test-only flags of lockd gateway.
type gatewayFaultArgs struct {
	// via sends the gateway's connections to a member address through
	// another address (a test's proxy, which can cut the link).
	via string
}

func (a *gatewayFaultArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&a.via, "fault-via", "", "test builds only: dial member address A through address B instead: A=B[,A=B]")
}

// refuseFaultFlags has nothing to refuse: this build has the fault flags.
func refuseFaultFlags([]string) error { return nil }

// applyFaults installs the test-only fault surface on the member: the
// controllable clock and log disk (served on their own listener), the
// trace file and the bug mode. They live as long as the process: a test kills it.
func applyFaults(a *faultArgs, opts *lockd.Options) error {
	clock, disk := faultctl.NewClock(), &faultctl.Disk{}
	opts.BeforeLogSync = disk.BeforeSync
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
		srv := &http.Server{Handler: faultctl.Handler(clock, disk), ReadHeaderTimeout: 5 * time.Second}
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
		c.Clock, c.Hooks = clock, &node.Hooks{Bug: bug}
	}
	if trace != nil {
		opts.TuneShard = func(g uint64, c *node.Config) {
			t := trace.Group(g)
			c.Hooks = &node.Hooks{Bug: bug, OnEvent: t.Event, OnApply: t.Apply, OnWake: t.Wake}
		}
	}
	return nil
}

// applyGatewayFaults sends the gateway's connections to the --fault-via
// addresses: a test puts a proxy of its own there, so it can cut the
// gateway off from members as partitions cut members off from each other.
func applyGatewayFaults(a *gatewayFaultArgs, c *gateway.Config) error {
	if a.via == "" {
		return nil
	}
	via := map[string]string{}
	for _, pair := range strings.Split(a.via, ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if _, _, err := net.SplitHostPort(from); !ok || err != nil {
			return fmt.Errorf("--fault-via %q: want host:port=host:port", pair)
		}
		if _, _, err := net.SplitHostPort(to); err != nil {
			return fmt.Errorf("--fault-via %q: want host:port=host:port", pair)
		}
		via[from] = to
	}
	dialer := &net.Dialer{Timeout: 2 * time.Second}
	c.Transport = &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if to, ok := via[addr]; ok {
				addr = to
			}
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	return nil
}
