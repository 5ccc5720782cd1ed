package link

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// TCPConfig configures a TCP link.
type TCPConfig struct {
	// Local is the address peers dial this member at: sent first on every
	// connection it dials, so the peer calls back on that connection.
	Local string
	// Conns accepts the link connections peers dial (a core/mux route);
	// Streams the one-request connections that carry a stream.
	Conns, Streams net.Listener
	// Dial connects to the member at addr: a link connection, or with
	// stream a connection for one streamed request. It must name the
	// connection's use to the peer's listener (core/mux's header).
	Dial func(ctx context.Context, addr string, stream bool) (net.Conn, error)
	// DialTimeout bounds one dial; WriteTimeout one write to a connection.
	DialTimeout  time.Duration
	WriteTimeout time.Duration
	// MaxFrame bounds a frame read from a peer.
	MaxFrame int
	Logger   *slog.Logger
}

// DefaultTCPConfig returns the timeouts and bounds TCP uses; the listeners
// and Dial are the caller's.
func DefaultTCPConfig() TCPConfig {
	return TCPConfig{DialTimeout: 2 * time.Second, WriteTimeout: 10 * time.Second, MaxFrame: maxFrameDefault}
}

// Validate reports a config NewTCP cannot run with.
func (c TCPConfig) Validate() error {
	switch {
	case c.Local == "" || c.Conns == nil || c.Streams == nil || c.Dial == nil:
		return errors.New("link: Local, Conns, Streams and Dial are required")
	case c.DialTimeout <= 0 || c.WriteTimeout <= 0:
		return errors.New("link: DialTimeout and WriteTimeout must be > 0")
	case c.MaxFrame < 1<<10:
		return errors.New("link: MaxFrame must be at least 1 KiB")
	}
	return nil
}

// TCP is a Link over TCP: one connection between two members, dialled by
// the first to call and again after it breaks, carries every kind and group
// of request both ways as frames (frame.go), and a streamed request gets a
// connection of its own. The dialler names itself first (a hello), so the
// member it dialled calls back on the same connection. (Two members
// dialling each other at once end up with a connection each, both used.)
// Writes are combined: a caller finding a write in progress leaves its
// frame for that writer, so under load one write carries many frames, with
// no goroutine in between.
type TCP struct {
	cfg      TCPConfig
	handlers [kindCount]atomic.Pointer[Handler]

	mu      sync.Mutex
	peers   map[string]*peer
	conns   map[*conn]struct{}
	closed  bool
	done    chan struct{}
	readers sync.WaitGroup
}

var _ Link = (*TCP)(nil)

// NewTCP starts serving cfg's listeners.
func NewTCP(cfg TCPConfig) (*TCP, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &TCP{cfg: cfg, peers: make(map[string]*peer), conns: make(map[*conn]struct{}), done: make(chan struct{})}
	t.readers.Add(2)
	go t.accept(cfg.Conns, t.serveConn)
	go t.accept(cfg.Streams, t.serveStream)
	return t, nil
}

// Handle implements Link.
func (t *TCP) Handle(kind Kind, h Handler) {
	if kind == 0 || kind >= kindCount {
		panic(fmt.Sprintf("link: no such kind %d", kind))
	}
	t.handlers[kind].Store(&h)
}

func (t *TCP) handler(kind Kind) Handler {
	if kind == 0 || kind >= kindCount {
		return nil
	}
	if h := t.handlers[kind].Load(); h != nil {
		return *h
	}
	return nil
}

// Close closes every connection and stops accepting; calls in flight fail.
func (t *TCP) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.done)
	conns := make([]*conn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	err := errors.Join(t.cfg.Conns.Close(), t.cfg.Streams.Close())
	for _, c := range conns {
		c.close(ErrClosed)
	}
	t.readers.Wait()
	return err
}

// Call implements Link.
func (t *TCP) Call(ctx context.Context, addr string, req Request) ([]byte, error) {
	if req.Stream != nil {
		return t.callStream(ctx, addr, req)
	}
	c, err := t.connTo(ctx, addr)
	if err != nil {
		return nil, err
	}
	return c.call(ctx, req)
}

// peer is the link connection to one member, if any.
type peer struct {
	mu   sync.Mutex
	conn *conn
	// dial is the dial in progress, shared by the callers that wait for it.
	dial *dialing
}

type dialing struct {
	done chan struct{}
	conn *conn
	err  error
}

// connTo returns the connection to addr, dialling it if there is none.
// Callers arriving during a dial share its outcome.
func (t *TCP) connTo(ctx context.Context, addr string) (*conn, error) {
	p := t.peerFor(addr)
	if p == nil {
		return nil, fmt.Errorf("%w: %w", ErrNotSent, ErrClosed)
	}
	p.mu.Lock()
	if p.conn != nil && !p.conn.isClosed() {
		c := p.conn
		p.mu.Unlock()
		return c, nil
	}
	d := p.dial
	if d == nil {
		d = &dialing{done: make(chan struct{})}
		p.dial = d
		go t.dial(p, d, addr)
	}
	p.mu.Unlock()
	select {
	case <-d.done:
		return d.conn, d.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: dialling %s: %w", ErrNotSent, addr, ctx.Err())
	}
}

// dial connects to addr for p and publishes the outcome to its waiters.
func (t *TCP) dial(p *peer, d *dialing, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.DialTimeout)
	defer cancel()
	nc, err := t.cfg.Dial(ctx, addr, false)
	if err == nil {
		d.conn, err = t.track(nc)
	}
	if err == nil && !d.conn.send(frame{typ: frameHello, body: []byte(t.cfg.Local)}) {
		err = errors.New("connection failed before its hello was sent")
	}
	if err != nil {
		d.err = fmt.Errorf("%w: dial %s: %w", ErrNotSent, addr, err)
	}
	p.mu.Lock()
	p.dial = nil
	if d.conn != nil {
		p.conn = d.conn
	}
	p.mu.Unlock()
	close(d.done)
}

// peerFor is the record of the member at addr, made on first use; nil once
// t is closed.
func (t *TCP) peerFor(addr string) *peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	p := t.peers[addr]
	if p == nil {
		p = &peer{}
		t.peers[addr] = p
	}
	return p
}

// adopt makes c, dialled by the member at addr, this member's connection
// to it, unless a live one is already there.
func (t *TCP) adopt(addr string, c *conn) {
	p := t.peerFor(addr)
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil || p.conn.isClosed() {
		p.conn = c
	}
}

// track registers nc and starts its reader.
func (t *TCP) track(nc net.Conn) (*conn, error) {
	c := newConn(t, nc)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = nc.Close()
		return nil, ErrClosed
	}
	t.conns[c] = struct{}{}
	t.readers.Add(1)
	t.mu.Unlock()
	go c.read()
	return c, nil
}

func (t *TCP) untrack(c *conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}

func (t *TCP) accept(ln net.Listener, serve func(net.Conn)) {
	defer t.readers.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-t.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// A closed route ends the loop as Close would.
			t.cfg.Logger.Debug("link: accept stopped", "err", err)
			return
		}
		serve(nc)
	}
}

func (t *TCP) serveConn(nc net.Conn) {
	if _, err := t.track(nc); err != nil {
		t.cfg.Logger.Debug("link: connection refused", "err", err)
	}
}

// serve runs f's handler and sends its reply on c.
func (t *TCP) serve(ctx context.Context, c *conn, f frame, stream io.Reader) {
	var body []byte
	var err error
	if h := t.handler(f.kind); h != nil {
		body, err = h(ctx, Request{Kind: f.kind, Group: f.group, Body: f.body, Stream: stream, StreamSize: f.streamSize})
	} else {
		err = noHandler(f.kind)
	}
	reply := frame{typ: frameReply, id: f.id, body: body}
	if err != nil {
		reply = frame{typ: frameError, id: f.id, body: []byte(err.Error())}
	}
	c.send(reply)
}

// conn is one link connection: calls out, requests in, replies both ways.
type conn struct {
	t      *TCP
	nc     net.Conn
	ctx    context.Context // ends when the connection closes
	cancel context.CancelFunc

	// Write combining: frames go into wbuf; the caller that finds no
	// write in progress writes, and keeps writing what others queued
	// meanwhile; spare is the other buffer.
	wmu      sync.Mutex
	wbuf     []byte
	spare    []byte
	flushing bool
	werr     error

	pmu     sync.Mutex
	pending map[uint64]chan frame
	nextID  uint64

	closeOnce sync.Once
	closed    chan struct{}
	err       error // why it closed, set before closed is
}

// maxKeptBuffer bounds the write buffer kept between writes.
const maxKeptBuffer = 1 << 20

func newConn(t *TCP, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{t: t, nc: nc, ctx: ctx, cancel: cancel, pending: make(map[uint64]chan frame), closed: make(chan struct{})}
}

func (c *conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// call sends req and waits for its reply.
func (c *conn) call(ctx context.Context, req Request) ([]byte, error) {
	ch := make(chan frame, 1)
	c.pmu.Lock()
	if c.isClosed() {
		c.pmu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrNotSent, c.err)
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.pmu.Unlock()
	if !c.send(frame{typ: frameRequest, id: id, kind: req.Kind, group: req.Group, body: req.Body}) {
		c.forget(id)
		return nil, fmt.Errorf("%w: connection to %s closed", ErrNotSent, c.nc.RemoteAddr())
	}
	select {
	case f := <-ch:
		return replyOf(f)
	case <-ctx.Done():
		c.forget(id)
		return nil, fmt.Errorf("no reply from %s: %w", c.nc.RemoteAddr(), ctx.Err())
	case <-c.closed:
		// The reader may have delivered the reply just before closing.
		select {
		case f := <-ch:
			return replyOf(f)
		default:
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrConnLost, c.nc.RemoteAddr(), c.err)
	}
}

func replyOf(f frame) ([]byte, error) {
	if f.typ == frameError {
		return nil, &RemoteError{Message: string(f.body)}
	}
	return f.body, nil
}

func (c *conn) forget(id uint64) {
	c.pmu.Lock()
	delete(c.pending, id)
	c.pmu.Unlock()
}

// send queues f and writes it unless a write in progress will. It reports
// false when f was never queued (the connection had failed): then it
// surely was not sent.
func (c *conn) send(f frame) bool {
	c.wmu.Lock()
	if c.werr != nil {
		c.wmu.Unlock()
		return false
	}
	c.wbuf = appendFrame(c.wbuf, f)
	if c.flushing {
		c.wmu.Unlock()
		return true
	}
	c.flushing = true
	for len(c.wbuf) > 0 && c.werr == nil {
		out := c.wbuf
		c.wbuf = c.spare[:0]
		c.wmu.Unlock()
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.t.cfg.WriteTimeout))
		_, err := c.nc.Write(out)
		c.wmu.Lock()
		if cap(out) <= maxKeptBuffer {
			c.spare = out[:0]
		} else {
			c.spare = nil
		}
		if err != nil {
			c.werr = err
		}
	}
	c.flushing = false
	err := c.werr
	c.wmu.Unlock()
	if err != nil {
		c.close(fmt.Errorf("write: %w", err))
	}
	return true
}

// read serves c's frames until it fails, then closes it.
func (c *conn) read() {
	defer c.t.readers.Done()
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		f, err := readFrame(r, c.t.cfg.MaxFrame)
		if err != nil {
			c.close(fmt.Errorf("read: %w", err))
			return
		}
		switch f.typ {
		case frameRequest:
			go c.t.serve(c.ctx, c, f, nil)
		case frameHello:
			c.t.adopt(string(f.body), c)
		case frameReply, frameError:
			c.pmu.Lock()
			ch := c.pending[f.id]
			delete(c.pending, f.id)
			c.pmu.Unlock()
			if ch != nil {
				ch <- f
			}
		default:
			c.close(fmt.Errorf("%w: unexpected %d frame", errFrame, f.typ))
			return
		}
	}
}

// close shuts c for good; calls waiting on it fail with ErrConnLost.
func (c *conn) close(why error) {
	c.closeOnce.Do(func() {
		c.pmu.Lock()
		c.err = why
		close(c.closed)
		c.pmu.Unlock()
		c.wmu.Lock()
		if c.werr == nil {
			c.werr = why
		}
		c.wmu.Unlock()
		c.cancel()
		_ = c.nc.Close()
		c.t.untrack(c)
		c.t.cfg.Logger.Debug("link: connection closed", "remote", c.nc.RemoteAddr(), "why", why)
	})
}

// callStream sends req and its stream on a connection of their own.
func (t *TCP) callStream(ctx context.Context, addr string, req Request) ([]byte, error) {
	dctx, cancel := context.WithTimeout(ctx, t.cfg.DialTimeout)
	nc, err := t.cfg.Dial(dctx, addr, true)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %w", ErrNotSent, addr, err)
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	defer stop()
	head := appendFrame(nil, frame{typ: frameStream, kind: req.Kind, group: req.Group, streamSize: req.StreamSize, body: req.Body})
	w := bufio.NewWriterSize(nc, 64<<10)
	if _, err := w.Write(head); err != nil {
		return nil, fmt.Errorf("send to %s: %w", addr, err)
	}
	if _, err := io.CopyN(w, req.Stream, req.StreamSize); err != nil {
		return nil, fmt.Errorf("stream to %s: %w", addr, err)
	}
	if err := w.Flush(); err != nil {
		return nil, fmt.Errorf("stream to %s: %w", addr, err)
	}
	f, err := readFrame(bufio.NewReader(nc), t.cfg.MaxFrame)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("no reply from %s: %w", addr, err)
	}
	return replyOf(f)
}

// serveStream serves the one streamed request of nc, then closes it.
func (t *TCP) serveStream(nc net.Conn) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = nc.Close()
		return
	}
	t.readers.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.readers.Done()
		c := newConn(t, nc)
		defer c.close(errors.New("stream served"))
		go func() {
			select {
			case <-t.done:
				c.close(ErrClosed)
			case <-c.closed:
			}
		}()
		r := bufio.NewReaderSize(nc, 64<<10)
		f, err := readFrame(r, t.cfg.MaxFrame)
		if err != nil || f.typ != frameStream {
			t.cfg.Logger.Debug("link: bad stream request", "remote", nc.RemoteAddr(), "err", err)
			return
		}
		stream := io.LimitReader(r, f.streamSize)
		t.serve(c.ctx, c, f, stream)
	}()
}
