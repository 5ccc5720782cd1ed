package main

import "testing"

// Goal: the gRPC listener is configurable and off unless asked for on a
// member, on by default in lockd dev (one port per node). Method: parse
// command lines and read the options and dev addresses.
func TestGRPCFlags(t *testing.T) {
	base := []string{"--id", "n1", "--raft-addr", "127.0.0.1:7170", "--data-dir", "d", "--peers", "n1=127.0.0.1:7170", "--insecure"}
	opts, err := parseMember(base)
	if err != nil || opts.GRPCAddr != "" {
		t.Fatalf("member without --grpc-addr: %q %v, want no gRPC", opts.GRPCAddr, err)
	}
	opts, err = parseMember(append(base, "--grpc-addr", "127.0.0.1:7270"))
	if err != nil || opts.GRPCAddr != "127.0.0.1:7270" {
		t.Fatalf("member --grpc-addr: %q %v", opts.GRPCAddr, err)
	}
	dev, err := parseDev(nil)
	if err != nil || dev.grpc.devAddr(dev.host, 2) != "127.0.0.1:7272" {
		t.Fatalf("dev default: %q %v, want 127.0.0.1:7272 for the third node", dev.grpc.devAddr(dev.host, 2), err)
	}
	dev, err = parseDev([]string{"--grpc-port", "0"})
	if err != nil || dev.grpc.devAddr(dev.host, 0) != "" {
		t.Fatalf("dev --grpc-port 0: %q %v, want no gRPC", dev.grpc.devAddr(dev.host, 0), err)
	}
}
