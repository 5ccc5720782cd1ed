package loopback

import (
	"net"
	"strconv"
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
