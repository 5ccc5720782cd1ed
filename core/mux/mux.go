// Package mux shares one TCP listener between lockstep's member-to-member
// connections, as Consul and Nomad share their RPC port: each connection
// starts with a header naming its use (a core/link connection, or one
// carrying a stream) and a number (0 for both today), and is handed to the
// listener registered for that pair. A member then needs one address for
// everything its peers send it, and the public API port carries no
// internal endpoint.
package mux

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Kind names the protocol a connection speaks after its header.
type Kind byte

const (
	// Link carries a core/link connection: every group's Raft RPCs,
	// forwarded commands and read-index queries from one member.
	Link Kind = 'L'
	// Stream carries one core/link request with a stream (a Raft snapshot).
	Stream Kind = 'S'
)

// headerTimeout bounds how long an accepted connection may take to send
// its header, so a silent client cannot pin a goroutine.
const headerTimeout = 5 * time.Second

// handoffTimeout bounds how long a routed connection waits for its
// listener to accept it before it is dropped.
const handoffTimeout = 5 * time.Second

// acceptQueueLen is the backlog of each route.
const acceptQueueLen = 64

// maxGroup bounds the group number a header may name.
const maxGroup = 1 << 20

// ErrClosed is returned by Accept on a closed route or listener.
var ErrClosed = errors.New("mux: listener closed")

type route struct {
	kind  Kind
	group uint64
}

// Listener routes the connections of one net.Listener by their header.
type Listener struct {
	ln     net.Listener
	logger *slog.Logger

	mu     sync.Mutex
	routes map[route]*Route
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

// New starts routing ln's connections; Close stops it and closes ln.
func New(ln net.Listener, logger *slog.Logger) *Listener {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Listener{ln: ln, logger: logger, routes: make(map[route]*Route), done: make(chan struct{})}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

// Addr is the shared listening address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Route registers the listener for (kind, group); it must not exist yet.
func (l *Listener) Route(kind Kind, group uint64) (*Route, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	key := route{kind, group}
	if _, ok := l.routes[key]; ok {
		return nil, fmt.Errorf("mux: route %c/%d registered twice", kind, group)
	}
	r := &Route{owner: l, key: key, conns: make(chan net.Conn, acceptQueueLen), done: make(chan struct{})}
	l.routes[key] = r
	return r, nil
}

// Close stops accepting, closes every route and the underlying listener.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	routes := l.routes
	l.routes = map[route]*Route{}
	l.mu.Unlock()
	err := l.ln.Close()
	for _, r := range routes {
		r.shut()
	}
	l.wg.Wait()
	return err
}

func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.logger.Warn("mux: accept failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		l.wg.Add(1)
		go l.handoff(conn)
	}
}

// handoff reads conn's header and passes it to its route.
func (l *Listener) handoff(conn net.Conn) {
	defer l.wg.Done()
	_ = conn.SetReadDeadline(time.Now().Add(headerTimeout))
	if err := l.handshake(conn); err != nil {
		_ = conn.Close()
		return
	}
	br := bufio.NewReaderSize(conn, 16)
	kind, group, err := readHeader(br)
	if err != nil {
		l.logger.Debug("mux: bad header", "remote", conn.RemoteAddr(), "err", err)
		_ = conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	l.mu.Lock()
	r := l.routes[route{kind, group}]
	l.mu.Unlock()
	if r == nil {
		l.logger.Debug("mux: no route", "kind", string(kind), "group", group, "remote", conn.RemoteAddr())
		_ = conn.Close()
		return
	}
	// The reader may hold bytes past the header; keep them in front.
	var c net.Conn = conn
	if n := br.Buffered(); n > 0 {
		pre, _ := br.Peek(n)
		c = &prefixedConn{Conn: conn, pre: append([]byte(nil), pre...)}
	}
	t := time.NewTimer(handoffTimeout)
	defer t.Stop()
	select {
	case r.conns <- c:
	case <-r.done:
		_ = conn.Close()
	case <-t.C:
		l.logger.Warn("mux: route not accepting, connection dropped", "kind", string(kind), "group", group)
		_ = conn.Close()
	}
}

func readHeader(br *bufio.Reader) (Kind, uint64, error) {
	b, err := br.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	kind := Kind(b)
	if kind != Link && kind != Stream {
		return 0, 0, fmt.Errorf("unknown kind %#x", b)
	}
	group, err := binary.ReadUvarint(br)
	if err != nil {
		return 0, 0, err
	}
	if group > maxGroup {
		return 0, 0, fmt.Errorf("group %d out of range", group)
	}
	return kind, group, nil
}

// appendHeader encodes the header a dialer sends first.
func appendHeader(buf []byte, kind Kind, group uint64) []byte {
	buf = append(buf, byte(kind))
	return binary.AppendUvarint(buf, group)
}

// Dial connects to a member's shared address and names the route.
func Dial(ctx context.Context, addr string, kind Kind, group uint64) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return sendHeader(ctx, conn, addr, kind, group)
}

// sendHeader names the route on a fresh connection (closed on failure).
func sendHeader(ctx context.Context, conn net.Conn, addr string, kind Kind, group uint64) (net.Conn, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetWriteDeadline(dl)
	}
	if _, err := conn.Write(appendHeader(nil, kind, group)); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("mux: send header to %s: %w", addr, err)
	}
	_ = conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// Route is the net.Listener of one (kind, group): it accepts the
// connections whose header names it.
type Route struct {
	owner *Listener
	key   route
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

var _ net.Listener = (*Route)(nil)

// Accept implements net.Listener.
func (r *Route) Accept() (net.Conn, error) {
	select {
	case c := <-r.conns:
		return c, nil
	case <-r.done:
		return nil, ErrClosed
	}
}

// Close unregisters the route; the shared listener keeps serving others.
func (r *Route) Close() error {
	r.owner.mu.Lock()
	if r.owner.routes[r.key] == r {
		delete(r.owner.routes, r.key)
	}
	r.owner.mu.Unlock()
	r.shut()
	return nil
}

func (r *Route) shut() {
	r.once.Do(func() {
		close(r.done)
		for {
			select {
			case c := <-r.conns:
				_ = c.Close()
			default:
				return
			}
		}
	})
}

// Addr implements net.Listener: the shared address.
func (r *Route) Addr() net.Addr { return r.owner.Addr() }

// prefixedConn is a net.Conn whose first reads return pre: bytes that
// arrived with the header.
type prefixedConn struct {
	net.Conn
	pre []byte
}

func (c *prefixedConn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
