package main

import (
	"flag"
	"fmt"
	"net"
)

// healthArgs is a member's probe listener (--health-addr).
type healthArgs struct {
	addr string
}

func (a *healthArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&a.addr, "health-addr", "", "also serve /livez, /readyz and /healthz (nothing else) in plaintext on this address, "+
		"for probes that cannot present a client certificate (loopback or the pod IP); empty: none")
}

// check refuses an address that is not host:port.
func (a *healthArgs) check() error {
	if a.addr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(a.addr); err != nil {
		return fmt.Errorf("--health-addr: %w", err)
	}
	return nil
}
