package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func dialVia(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg and reads its echo within limit.
func roundTrip(c net.Conn, msg string, limit time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(limit))
	line, err := bufio.NewReader(c).ReadString('\n')
	return line, err
}

func newProxy(t *testing.T) (*Proxy, *Link) {
	t.Helper()
	l := NewLink("a->b")
	p, err := Listen("127.0.0.1:0", echoServer(t), func(net.Addr) *Link { return l })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, l
}

// TestProxyStates: goal — each link state does to a live connection what
// it claims. Method: one connection through a proxy to an echo server;
// pass echoes, blackhole stalls without closing, heal delivers the held
// bytes, reset closes the connection and refuses new ones.
func TestProxyStates(t *testing.T) {
	p, l := newProxy(t)
	c := dialVia(t, p)
	if got, err := roundTrip(c, "one", 2*time.Second); err != nil || got != "one\n" {
		t.Fatalf("pass: %q %v", got, err)
	}
	l.Set(Blackhole)
	if _, err := c.Write([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	r := bufio.NewReader(c)
	if got, err := r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackhole delivered %q (err %v), want a stall", got, err)
	}
	if l.Conns() != 1 {
		t.Fatalf("blackhole closed the connection: %d conns", l.Conns())
	}
	l.Set(Pass)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "two\n" {
		t.Fatalf("heal: held bytes %q %v", got, err)
	}
	l.Set(Reset)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadString('\n'); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("reset: read err %v, want the connection closed", err)
	}
	c2 := dialVia(t, p)
	if _, err := roundTrip(c2, "three", time.Second); err == nil {
		t.Fatal("reset link carried a new connection")
	}
	l.Set(Pass)
	if got, err := roundTrip(dialVia(t, p), "four", 2*time.Second); err != nil || got != "four\n" {
		t.Fatalf("after heal: %q %v", got, err)
	}
}

// TestProxyDelay: goal — delay is per-chunk latency in each direction.
// Method: a round trip over a link delayed 100ms takes at least 200ms.
func TestProxyDelay(t *testing.T) {
	p, l := newProxy(t)
	l.SetDelay(100 * time.Millisecond)
	c := dialVia(t, p)
	start := time.Now()
	if got, err := roundTrip(c, "x", 3*time.Second); err != nil || got != "x\n" {
		t.Fatalf("%q %v", got, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("round trip took %s, want >= 200ms", d)
	}
}

// TestMeshCut: goal — Cut severs both directions of each pair and only
// those, routes a connection by the member that opened it, and Cut(nil)
// heals. Method: a 3-member mesh to echo servers; member a's connection
// through b's proxy is identified as a's.
func TestMeshCut(t *testing.T) {
	members := []string{"a", "b", "c"}
	targets := map[string]string{}
	for _, id := range members {
		targets[id] = echoServer(t)
	}
	var opener atomic.Value
	opener.Store("")
	m, err := NewMesh(MeshOptions{Members: members, Targets: targets,
		Identify: func(net.Addr) (string, bool) { o := opener.Load().(string); return o, o != "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	m.Cut([][2]string{{"a", "c"}})
	for _, l := range []*Link{m.Link("a", "c"), m.Link("c", "a")} {
		if st, _ := l.State(); st != Blackhole {
			t.Fatalf("%s is %s, want blackhole", l.Name(), st)
		}
	}
	for _, l := range []*Link{m.Link("a", "b"), m.Link("b", "a"), m.Link("b", "c"), m.Link("c", "b")} {
		if st, _ := l.State(); st != Pass {
			t.Fatalf("%s is %s, want pass", l.Name(), st)
		}
	}
	dial := func(from, to string) net.Conn {
		c, err := net.Dial("tcp", m.Addr(from, to))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	if _, err := roundTrip(dial("a", "c"), "cut", 300*time.Millisecond); err == nil {
		t.Fatal("a->c passed through a cut")
	}
	if got, err := roundTrip(dial("b", "c"), "ok", 2*time.Second); err != nil || got != "ok\n" {
		t.Fatalf("b->c: %q %v", got, err)
	}
	opener.Store("a") // a dials c with b's address for c
	if _, err := roundTrip(dial("b", "c"), "stale", 300*time.Millisecond); err == nil {
		t.Fatal("a reached c through b's proxy despite the cut")
	}
	opener.Store("")
	m.Cut(nil)
	if got, err := roundTrip(dial("a", "c"), "healed", 2*time.Second); err != nil || got != "healed\n" {
		t.Fatalf("after heal: %q %v", got, err)
	}
}
