package mux

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// TestRoutesShareOnePort: goal — connections naming different (kind,
// group) routes reach their own listener over one port, bytes sent right
// after the header included, and a connection naming no route is closed.
// Method: two routes on a loopback listener, a dialer per route writing
// its payload together with the header, and a stray header.
func TestRoutesShareOnePort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := New(ln, nil)
	defer m.Close()
	links, err := m.Route(Link, 0)
	if err != nil {
		t.Fatal(err)
	}
	streams, err := m.Route(Stream, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Route(Link, 0); err == nil {
		t.Fatal("a route registered twice was accepted")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	send := func(kind Kind, group uint64, payload string) {
		c, err := Dial(ctx, ln.Addr().String(), kind, group)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(payload)); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
	}
	expect := func(r *Route, want string) {
		c, err := r.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got, _ := io.ReadAll(c)
		if string(got) != want {
			t.Fatalf("route %c/%d read %q, want %q", r.key.kind, r.key.group, got, want)
		}
	}
	send(Stream, 3, "to stream")
	send(Link, 0, "to link")
	expect(streams, "to stream")
	expect(links, "to link")

	stray, err := Dial(ctx, ln.Addr().String(), Stream, 9)
	if err != nil {
		t.Fatal(err)
	}
	_ = stray.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := stray.Read(make([]byte, 1)); err == nil {
		t.Fatalf("a connection to no route stayed open (read %d bytes)", n)
	}
	_ = stray.Close()

	// Bytes that are no header at all close the connection too.
	junk, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = junk.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	_ = junk.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := junk.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection with a junk header stayed open")
	}
	_ = junk.Close()

	if err := links.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := links.Accept(); err != ErrClosed {
		t.Fatalf("Accept on a closed route: %v, want ErrClosed", err)
	}
}
