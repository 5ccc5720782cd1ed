// Package loopback hands out TCP addresses on 127.0.0.1 for test clusters
// whose members restart on the address they had.
package loopback

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// Ports are drawn from [low, high): below Linux's default ephemeral range
// (32768-60999). A port the kernel handed out (listen on :0) is also what
// it picks for outgoing connections, so a member restarted on it can find
// it taken by some connection of a parallel test; a port below the range
// is only ever taken by a listener.
const low, high = 20000, 32000

// A port is handed out once per process, and to one process at a time: its
// claim file under os.TempDir()/lockstep-loopback is flock-ed by the
// process that drew it, and held until that process exits (the kernel
// drops the lock then, however it ends). Between Addr and the member's
// listen, and while a member is down between restarts, the port is free
// in the kernel's eyes; the claim keeps other Addr callers (parallel test
// packages are other processes) from drawing it meanwhile.
var claims struct {
	sync.Mutex
	held map[int]*os.File
}

// Addr returns a 127.0.0.1 address that was free a moment ago and that no
// other Addr call, in this process or another, returns while this process
// lives.
func Addr() (string, error) { return addrIn(low, high) }

// addrIn is Addr over ports [lo, hi).
func addrIn(lo, hi int) (string, error) {
	dir := filepath.Join(os.TempDir(), "lockstep-loopback")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", fmt.Errorf("loopback: %w", err)
	}
	claims.Lock()
	defer claims.Unlock()
	if claims.held == nil {
		claims.held = map[int]*os.File{}
	}
	for range 100 {
		port := lo + rand.IntN(hi-lo)
		if claims.held[port] != nil {
			continue
		}
		f, err := claim(dir, port)
		if err != nil {
			return "", err
		}
		if f == nil {
			continue
		}
		if !bindable(port) {
			// Taken by a listener outside this scheme: not ours to hold.
			_ = f.Close()
			continue
		}
		claims.held[port] = f
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
	}
	return "", errors.New("loopback: no free port in 100 tries")
}

// claim takes port's claim file, or returns nil if another process holds it.
func claim(dir string, port int) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("loopback: claim %d: %w", port, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("loopback: claim %d: %w", port, err)
	}
	return f, nil
}

// bindable reports whether port can be listened on now.
func bindable(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}
