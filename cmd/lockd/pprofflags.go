package main

import (
	"flag"
	"fmt"

	"github.com/lockstep/lockstep/core/lockd"
)

// pprofArgs is the profiling listener (--pprof-addr), off by default.
type pprofArgs struct {
	addr string
}

func (a *pprofArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&a.addr, "pprof-addr", "", "serve net/http/pprof (CPU, heap, goroutine profiles) on this loopback address; empty: off")
}

// check refuses an address other than loopback host:port.
func (a *pprofArgs) check() error {
	if a.addr == "" {
		return nil
	}
	if err := lockd.CheckProfileAddr(a.addr); err != nil {
		return fmt.Errorf("--pprof-addr: %w", err)
	}
	return nil
}
