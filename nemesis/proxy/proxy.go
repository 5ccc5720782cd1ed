package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Proxy listens on one address and forwards every connection to a target,
// carried by the link Route picks for it.
type Proxy struct {
	ln     net.Listener
	target string
	// route picks the link of an accepted connection from its remote
	// address; it never returns nil.
	route func(remote net.Addr) *Link
	wg    sync.WaitGroup
}

// dialTimeout bounds reaching the target (a dead process refuses at once).
const dialTimeout = 2 * time.Second

// Listen starts a proxy on addr ("127.0.0.1:0" picks a port) to target.
func Listen(addr, target string, route func(remote net.Addr) *Link) (*Proxy, error) {
	if route == nil {
		return nil, errors.New("proxy: no route")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy listen on %s: %w", addr, err)
	}
	p := &Proxy{ln: ln, target: target, route: route}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting; connections end with their links or processes.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				slog.Warn("proxy accept", "addr", p.Addr(), "err", err)
			}
			return
		}
		go p.serve(c)
	}
}

// serve dials the target and hands the pair to the connection's link. A
// link that resets, or a target that is down, closes the dialer's side.
func (p *Proxy) serve(c net.Conn) {
	link := p.route(c.RemoteAddr())
	if st, _ := link.State(); st == Reset {
		_ = c.Close()
		return
	}
	s, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil {
		_ = c.Close()
		return
	}
	sp := &splice{client: c, server: s}
	if !link.attach(sp) {
		sp.close()
		return
	}
	link.run(sp)
}
