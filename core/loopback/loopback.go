// Package loopback hands out TCP addresses on 127.0.0.1 for test clusters
// whose members restart on the address they had.
package loopback

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
)

// Ports are drawn from [low, high): below Linux's default ephemeral range
// (32768-60999). A port the kernel handed out (listen on :0) is also what
// it picks for outgoing connections, so a member restarted on it can find
// it taken by some connection of a parallel test; a port below the range
// is only ever taken by a listener.
const low, high = 20000, 32000

// Addr returns a 127.0.0.1 address that was free a moment ago: it binds
// a random port of the range and releases it.
func Addr() (string, error) {
	for range 100 {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", low+rand.IntN(high-low)))
		if err != nil {
			continue
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			return "", fmt.Errorf("loopback: release %s: %w", addr, err)
		}
		return addr, nil
	}
	return "", errors.New("loopback: no free port in 100 tries")
}
