//go:build !lockstep_faults

package main

import (
	"errors"
	"flag"
	"strings"

	"github.com/lockstep/lockstep/core/gateway"
	"github.com/lockstep/lockstep/core/lockd"
)

// A production lockd has no fault flags at all: no clock control, no
// trace, no bug modes, and lockd -h lists none (faults_on.go has them).
type (
	faultArgs        struct{}
	gatewayFaultArgs struct{}
)

func (*faultArgs) register(*flag.FlagSet)        {}
func (*gatewayFaultArgs) register(*flag.FlagSet) {}

func applyFaults(*faultArgs, *lockd.Options) error                { return nil }
func applyGatewayFaults(*gatewayFaultArgs, *gateway.Config) error { return nil }

// errNoFaults says why a fault flag is unknown here, instead of the flag
// package's bare "flag provided but not defined".
var errNoFaults = errors.New("--fault-* flags need a lockd built with -tags lockstep_faults")

// refuseFaultFlags explains a command line that failed to parse because
// it names a fault flag; nil when it names none.
func refuseFaultFlags(args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") && strings.HasPrefix(strings.TrimLeft(a, "-"), "fault-") {
			return errNoFaults
		}
	}
	return nil
}
