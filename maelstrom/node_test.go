package maelstrom

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// pipeNode runs n over pipes; send writes one line to its stdin and recv
// reads one line from its stdout (failing the test after a few seconds).
type pipeNode struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string
	done  chan error
}

func startPipeNode(t *testing.T, n *Node) *pipeNode {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &pipeNode{t: t, in: inW, lines: make(chan string, 64), done: make(chan error, 1)}
	go func() {
		err := n.Run(context.Background(), inR, outW)
		outW.Close()
		p.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after EOF")
		}
	})
	return p
}

func (p *pipeNode) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *pipeNode) recv() map[string]any {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("node closed its output")
		}
		var m struct {
			Src, Dest string
			Body      map[string]any
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			p.t.Fatalf("node printed a non-message %q: %v", line, err)
		}
		m.Body["_src"], m.Body["_dest"] = m.Src, m.Dest
		return m.Body
	case <-time.After(5 * time.Second):
		p.t.Fatal("no message from the node")
	}
	return nil
}

// TestProtocol checks the handshake and the error table on the wire. Goal:
// a node answers exactly as doc/protocol.md says. Method: drive a Node over
// pipes with handcrafted lines and compare each reply's fields.
func TestProtocol(t *testing.T) {
	n := NewNode(Options{})
	n.Handle("echo", func(_ context.Context, m Message) (any, error) {
		var b struct{ Echo string }
		if err := m.Decode(&b); err != nil {
			return nil, err
		}
		return map[string]any{"type": "echo_ok", "echo": b.Echo}, nil
	})
	n.Handle("slow", func(context.Context, Message) (any, error) { return nil, NewError(Timeout, "gave up") })
	n.Handle("oops", func(context.Context, Message) (any, error) { return nil, errors.New("boom") })
	p := startPipeNode(t, n)

	p.send(`{"src":"c1","dest":"n1","body":{"type":"echo","msg_id":1,"echo":"x"}}`)
	if b := p.recv(); b["type"] != "error" || b["code"] != float64(TemporarilyUnavailable) || b["in_reply_to"] != float64(1) {
		t.Fatalf("request before init: got %v, want error 11 in reply to 1", b)
	}
	p.send(`{"src":"c0","dest":"n1","body":{"type":"init","msg_id":7,"node_id":"n1","node_ids":["n1","n2"]}}`)
	if b := p.recv(); b["type"] != "init_ok" || b["in_reply_to"] != float64(7) || b["_src"] != "n1" || b["_dest"] != "c0" {
		t.Fatalf("init: got %v, want init_ok from n1 to c0 in reply to 7", b)
	}
	if n.ID() != "n1" || strings.Join(n.NodeIDs(), ",") != "n1,n2" {
		t.Fatalf("after init: id %q ids %v", n.ID(), n.NodeIDs())
	}
	cases := []struct {
		line string
		want map[string]any
	}{
		{`{"src":"c1","dest":"n1","body":{"type":"echo","msg_id":0,"echo":"hi"}}`,
			map[string]any{"type": "echo_ok", "echo": "hi", "in_reply_to": float64(0)}},
		{`{"src":"c1","dest":"n1","body":{"type":"nope","msg_id":2}}`,
			map[string]any{"type": "error", "code": float64(NotSupported), "in_reply_to": float64(2)}},
		{`{"src":"c1","dest":"n1","body":{"type":"echo","msg_id":3,"echo":5}}`,
			map[string]any{"type": "error", "code": float64(MalformedRequest), "in_reply_to": float64(3)}},
		// Code 0 must reach the wire, not vanish as an empty field.
		{`{"src":"c1","dest":"n1","body":{"type":"slow","msg_id":4}}`,
			map[string]any{"type": "error", "code": float64(Timeout), "in_reply_to": float64(4)}},
		{`{"src":"c1","dest":"n1","body":{"type":"oops","msg_id":5}}`,
			map[string]any{"type": "error", "code": float64(Crash), "in_reply_to": float64(5)}},
	}
	for _, c := range cases {
		p.send(c.line)
		got := p.recv()
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v (reply %v)", c.line, k, got[k], v, got)
			}
		}
		if _, ok := got["msg_id"]; !ok {
			t.Errorf("%s: reply has no msg_id", c.line)
		}
	}
}

// TestRPC checks request/response matching by msg_id between two nodes.
// Goal: an RPC gets its own reply, an error reply comes back as *Error with
// its definiteness, and silence ends with the context. Method: two Nodes
// wired by a router goroutine that can drop messages.
func TestRPC(t *testing.T) {
	a, b := NewNode(Options{}), NewNode(Options{})
	b.Handle("ping", func(_ context.Context, m Message) (any, error) {
		return map[string]any{"type": "pong"}, nil
	})
	b.Handle("fail", func(context.Context, Message) (any, error) { return nil, NewError(Timeout, "unknown outcome") })
	b.Handle("drop", func(context.Context, Message) (any, error) { return nil, nil })
	a.Init("n1", []string{"n1", "n2"})
	b.Init("n2", []string{"n1", "n2"})
	wire(t, map[string]*Node{"n1": a, "n2": b})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 {
		m, err := a.RPC(ctx, "n2", map[string]any{"type": "ping"})
		if err != nil || m.Type() != "pong" {
			t.Fatalf("ping: %v %s", err, m.Body)
		}
	}
	_, err := a.RPC(ctx, "n2", map[string]any{"type": "fail"})
	var e *Error
	if !errors.As(err, &e) || e.Code != Timeout || e.Definite() {
		t.Fatalf("fail: got %v, want an indefinite *Error with code 0", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	if _, err := a.RPC(short, "n2", map[string]any{"type": "drop"}); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNotSent) {
		t.Fatalf("drop: got %v, want a deadline error that was sent", err)
	}
	stopped := NewNode(Options{})
	if _, err := stopped.RPC(ctx, "n2", map[string]any{"type": "ping"}); !errors.Is(err, ErrNotSent) {
		t.Fatalf("RPC on a node that is not running: got %v, want ErrNotSent", err)
	}
}

// TestHandlerBound checks that requests beyond MaxHandlers are refused with
// a definite error instead of queueing without bound. Method: one slot,
// held by a handler that blocks until released.
func TestHandlerBound(t *testing.T) {
	n := NewNode(Options{MaxHandlers: 1})
	release := make(chan struct{})
	n.Handle("block", func(context.Context, Message) (any, error) {
		<-release
		return map[string]any{"type": "block_ok"}, nil
	})
	n.Init("n1", []string{"n1"})
	p := startPipeNode(t, n)
	p.send(`{"src":"c1","dest":"n1","body":{"type":"block","msg_id":1}}`)
	time.Sleep(50 * time.Millisecond) // let the first handler take the slot
	p.send(`{"src":"c1","dest":"n1","body":{"type":"block","msg_id":2}}`)
	if b := p.recv(); b["code"] != float64(TemporarilyUnavailable) || b["in_reply_to"] != float64(2) {
		t.Fatalf("second request: got %v, want error 11 in reply to 2", b)
	}
	close(release)
	if b := p.recv(); b["type"] != "block_ok" {
		t.Fatalf("first request: got %v", b)
	}
}

// wire connects nodes through a router goroutine per node output.
func wire(t *testing.T, nodes map[string]*Node) {
	t.Helper()
	inputs := make(map[string]*io.PipeWriter)
	for id, n := range nodes {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		inputs[id] = inW
		go func() { _ = n.Run(context.Background(), inR, outW); outW.Close() }()
		go func() {
			sc := bufio.NewScanner(outR)
			for sc.Scan() {
				var m Message
				if json.Unmarshal(sc.Bytes(), &m) == nil {
					if w := inputs[m.Dest]; w != nil {
						_, _ = w.Write(append(sc.Bytes(), '\n'))
					}
				}
			}
		}()
	}
	t.Cleanup(func() {
		for _, w := range inputs {
			w.Close()
		}
	})
	for _, n := range nodes {
		waitRunning(t, n)
	}
}

// waitRunning waits until Run has set up n's output.
func waitRunning(t *testing.T, n *Node) {
	t.Helper()
	for range 500 {
		n.outMu.Lock()
		up := n.out != nil
		n.outMu.Unlock()
		if up {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("node did not start running")
}
