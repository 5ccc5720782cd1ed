package main

import "flag"

// faultArgs are the test-only flags of a lockstep_faults build (see
// faults_on.go); a production build refuses them (faults_off.go).
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
