//go:build !lockstep_faults

package main

import (
	"errors"

	"github.com/lockstep/lockstep/core/gateway"
	"github.com/lockstep/lockstep/core/lockd"
)

// errNoFaults refuses the fault flags: a production lockd has no clock
// control, no trace and no bug modes.
var errNoFaults = errors.New("--fault-* flags need a lockd built with -tags lockstep_faults")

// applyFaults refuses any fault flag.
func applyFaults(a *faultArgs, _ *lockd.Options) error {
	if a.set() {
		return errNoFaults
	}
	return nil
}

// applyGatewayFaults refuses any fault flag.
func applyGatewayFaults(a *gatewayFaultArgs, _ *gateway.Config) error {
	if a.via != "" {
		return errNoFaults
	}
	return nil
}
