package link

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testNet is a registry of test members: a member's address is its link
// listener's; its stream listener is found through the registry, as
// core/mux finds both behind one port in lockd.
type testNet struct {
	mu      sync.Mutex
	streams map[string]string // link address -> stream address
	accepts map[string]*atomic.Int64
}

func newTestNet() *testNet {
	return &testNet{streams: make(map[string]string), accepts: make(map[string]*atomic.Int64)}
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// member starts a TCP link; addr reuses an address (a restart) when set.
func (tn *testNet) member(t *testing.T, addr string) (*TCP, string) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	conns, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	streams, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := conns.Addr().String()
	n := &atomic.Int64{}
	tn.mu.Lock()
	tn.streams[self] = streams.Addr().String()
	tn.accepts[self] = n
	tn.mu.Unlock()
	cfg := DefaultTCPConfig()
	cfg.Local, cfg.Conns, cfg.Streams = self, countingListener{conns, n}, streams
	cfg.Dial = func(ctx context.Context, addr string, stream bool) (net.Conn, error) {
		if stream {
			tn.mu.Lock()
			addr = tn.streams[addr]
			tn.mu.Unlock()
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	l, err := NewTCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, self
}

func echo(ctx context.Context, req Request) ([]byte, error) {
	return []byte(fmt.Sprintf("%v/%d/%s", req.Kind, req.Group, req.Body)), nil
}

// TestTCPCallsShareOneConnection: goal — concurrent calls of every kind and
// many groups from one member to another each get their own reply, and all
// travel on one connection. Method: 200 concurrent calls over 20 groups and
// two kinds; count the connections the callee accepted.
func TestTCPCallsShareOneConnection(t *testing.T) {
	tn := newTestNet()
	a, _ := tn.member(t, "")
	b, bAddr := tn.member(t, "")
	b.Handle(KindForward, echo)
	b.Handle(KindRaft, echo)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			kind := []Kind{KindForward, KindRaft}[i%2]
			group := uint64(i % 20)
			body := fmt.Sprintf("call-%d", i)
			got, err := a.Call(context.Background(), bAddr, Request{Kind: kind, Group: group, Body: []byte(body)})
			if want := fmt.Sprintf("%v/%d/%s", kind, group, body); err != nil || string(got) != want {
				t.Errorf("call %d: %q, %v; want %q", i, got, err, want)
			}
		})
	}
	wg.Wait()
	if n := tn.accepts[bAddr].Load(); n != 1 {
		t.Fatalf("%d connections accepted, want 1", n)
	}
}

// TestTCPCallsBackOnTheDialledConnection: goal — once A dialled B, B's
// own calls to A travel on that connection: one connection per member pair.
// Method: A calls B, then B calls A; count what each accepted.
func TestTCPCallsBackOnTheDialledConnection(t *testing.T) {
	tn := newTestNet()
	a, aAddr := tn.member(t, "")
	b, bAddr := tn.member(t, "")
	a.Handle(KindForward, echo)
	b.Handle(KindForward, echo)
	if _, err := a.Call(context.Background(), bAddr, Request{Kind: KindForward}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if got, err := b.Call(context.Background(), aAddr, Request{Kind: KindForward, Body: []byte("back")}); err != nil || string(got) != "forward/0/back" {
			t.Fatalf("call %d back: %q %v", i, got, err)
		}
	}
	if na, nb := tn.accepts[aAddr].Load(), tn.accepts[bAddr].Load(); na != 0 || nb != 1 {
		t.Fatalf("A accepted %d connections, B %d; want 0 and 1", na, nb)
	}
}

// TestTCPErrors: goal — the caller can tell what happened: a handler's
// error comes back as a RemoteError with its text, a kind nobody serves
// says so, a member nobody listens at is ErrNotSent (surely not served), a
// connection that breaks while the handler runs is ErrConnLost (maybe
// served), and a deadline passing while waiting is neither.
func TestTCPErrors(t *testing.T) {
	tn := newTestNet()
	a, _ := tn.member(t, "")
	b, bAddr := tn.member(t, "")
	block := make(chan struct{})
	b.Handle(KindForward, func(ctx context.Context, req Request) ([]byte, error) {
		if string(req.Body) == "block" {
			<-block
		}
		return nil, errors.New("refused: " + string(req.Body))
	})
	defer close(block)
	ctx := context.Background()
	_, err := a.Call(ctx, bAddr, Request{Kind: KindForward, Body: []byte("x")})
	var re *RemoteError
	if !errors.As(err, &re) || re.Message != "refused: x" {
		t.Errorf("handler error: %v, want RemoteError refused: x", err)
	}
	if _, err := a.Call(ctx, bAddr, Request{Kind: KindReadIndex}); !errors.As(err, &re) || !strings.Contains(re.Message, "no handler") {
		t.Errorf("unserved kind: %v", err)
	}
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	if _, err := a.Call(ctx, deadAddr, Request{Kind: KindForward}); !errors.Is(err, ErrNotSent) {
		t.Errorf("nobody listening: %v, want ErrNotSent", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := a.Call(short, bAddr, Request{Kind: KindForward, Body: []byte("block")}); err == nil || errors.Is(err, ErrNotSent) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline while the handler runs: %v", err)
	}
	lost := make(chan error, 1)
	go func() {
		_, err := a.Call(ctx, bAddr, Request{Kind: KindForward, Body: []byte("block")})
		lost <- err
	}()
	time.Sleep(50 * time.Millisecond)
	_ = b.Close()
	if err := <-lost; !errors.Is(err, ErrConnLost) || errors.Is(err, ErrNotSent) {
		t.Errorf("connection closed while the handler ran: %v, want ErrConnLost", err)
	}
}

// TestTCPRedialsAfterRestart: goal — once the member at an address comes
// back (a restart), the next call dials it again instead of failing on the
// dead connection for ever.
func TestTCPRedialsAfterRestart(t *testing.T) {
	tn := newTestNet()
	a, _ := tn.member(t, "")
	b, bAddr := tn.member(t, "")
	b.Handle(KindForward, echo)
	ctx := context.Background()
	if _, err := a.Call(ctx, bAddr, Request{Kind: KindForward}); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	b2, _ := tn.member(t, bAddr)
	b2.Handle(KindForward, echo)
	var err error
	for try := 0; try < 50; try++ {
		if _, err = a.Call(ctx, bAddr, Request{Kind: KindForward, Body: []byte("again")}); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no call got through after the restart: %v", err)
}

// TestTCPStream: goal — a request with a stream (a Raft snapshot) delivers
// every byte to the handler, on a connection of its own, while ordinary
// calls go on. Method: a 3 MiB stream hashed on both ends.
func TestTCPStream(t *testing.T) {
	tn := newTestNet()
	a, _ := tn.member(t, "")
	b, bAddr := tn.member(t, "")
	b.Handle(KindRaft, func(ctx context.Context, req Request) ([]byte, error) {
		if req.Stream == nil {
			return req.Body, nil
		}
		h := sha256.New()
		n, err := io.Copy(h, req.Stream)
		if err != nil || n != req.StreamSize {
			return nil, fmt.Errorf("read %d of %d: %v", n, req.StreamSize, err)
		}
		return h.Sum(append([]byte(nil), req.Body...)), nil
	})
	data := bytes.Repeat([]byte("snapshot"), 3<<20/8)
	want := sha256.Sum256(data)
	got, err := a.Call(context.Background(), bAddr, Request{Kind: KindRaft, Group: 3, Body: []byte("h:"),
		Stream: bytes.NewReader(data), StreamSize: int64(len(data))})
	if err != nil || !bytes.Equal(got, append([]byte("h:"), want[:]...)) {
		t.Fatalf("stream: %x, %v", got, err)
	}
	if got, err := a.Call(context.Background(), bAddr, Request{Kind: KindRaft, Body: []byte("plain")}); err != nil || string(got) != "plain" {
		t.Fatalf("call after a stream: %q, %v", got, err)
	}
}

// TestFrameMalformed: goal — a frame a peer garbles is refused with an
// error, never a panic or a huge allocation.
func TestFrameMalformed(t *testing.T) {
	good := appendFrame(nil, frame{typ: frameStream, id: 9, kind: KindRaft, group: 4, streamSize: 7, body: []byte("b")})
	f, err := parseFrame(good[4:])
	if err != nil || f.id != 9 || f.kind != KindRaft || f.group != 4 || f.streamSize != 7 || string(f.body) != "b" {
		t.Fatalf("round trip: %+v %v", f, err)
	}
	for n := 1; n < len(good)-5; n++ {
		if _, err := parseFrame(good[4 : 4+n]); err == nil {
			t.Errorf("frame cut to %d bytes parsed", n)
		}
	}
	if _, err := parseFrame([]byte{9, 1}); !errors.Is(err, errFrame) {
		t.Errorf("unknown type: %v", err)
	}
}
