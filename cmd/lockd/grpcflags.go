package main

import (
	"flag"
	"fmt"
)

// grpcArgs is the gRPC listener of a member (--grpc-addr) or of lockd dev
// (--grpc-port, one port per node from there).
type grpcArgs struct {
	addr     string
	basePort int
}

func (a *grpcArgs) registerMember(fs *flag.FlagSet) {
	fs.StringVar(&a.addr, "grpc-addr", "", "also serve the API over gRPC (proto/lockstep/v1) on this address; empty: no gRPC")
}

func (a *grpcArgs) registerDev(fs *flag.FlagSet) {
	fs.IntVar(&a.basePort, "grpc-port", 7270, "first gRPC port (one per node, consecutive; 0: no gRPC)")
}

// devAddr is node i's gRPC address in lockd dev, "" when off.
func (a *grpcArgs) devAddr(host string, i int) string {
	if a.basePort == 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d", host, a.basePort+i)
}
