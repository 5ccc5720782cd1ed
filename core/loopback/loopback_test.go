package loopback

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestAddrIsFreeAndBelowTheEphemeralRange: goal — Addr gives a bindable
// loopback address in [low, high). Method: draw a few and bind each.
func TestAddrIsFreeAndBelowTheEphemeralRange(t *testing.T) {
	for range 20 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		if host != "127.0.0.1" || p < low || p >= high {
			t.Fatalf("Addr() = %s, want 127.0.0.1:[%d,%d)", addr, low, high)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s not free: %v", addr, err)
		}
		_ = ln.Close()
	}
}

// childPort, set in a re-executed test binary's environment, makes
// TestClaimIsExclusiveAcrossProcesses the child that asks for that port.
const childPort = "LOCKSTEP_LOOPBACK_CHILD_PORT"

// TestClaimIsExclusiveAcrossProcesses: goal — a port Addr handed out is
// not handed out again while the process that took it lives: not by this
// process, not by another (a parallel test package), even though nothing
// listens on it. Method: take a port, then ask for that very port (a
// one-port range) here and in a re-executed test binary; both must be
// refused, and the port must still be bindable (the claim is no listener).
func TestClaimIsExclusiveAcrossProcesses(t *testing.T) {
	if p := os.Getenv(childPort); p != "" {
		port, _ := strconv.Atoi(p)
		if addr, err := addrIn(port, port+1); err == nil {
			fmt.Println("GOT", addr)
		}
		return
	}
	addr, err := Addr()
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	if again, err := addrIn(port, port+1); err == nil {
		t.Fatalf("this process got %s twice (again: %s)", addr, again)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestClaimIsExclusiveAcrossProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), childPort+"="+p)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "GOT") {
		t.Fatalf("another process got %s while this one holds it:\n%s", addr, out)
	}
	if !bindable(port) {
		t.Fatalf("%s not bindable: the claim must not hold the port itself", addr)
	}
}
