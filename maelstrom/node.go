package maelstrom

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// Handler serves one request. It returns the reply body (any value that
// encodes as a JSON object; the node adds msg_id and in_reply_to), or an
// error: an *Error is sent as is, anything else as Crash. A nil body and
// nil error send nothing. ctx ends when Run returns.
type Handler func(ctx context.Context, req Message) (any, error)

// InitFunc runs when init arrives, before init_ok is sent. It runs on the
// reading goroutine, so it must not wait for other messages.
type InitFunc func(ctx context.Context, id string, nodeIDs []string) error

// Options tunes a Node. Zero values take the defaults below.
type Options struct {
	// Logger receives diagnostics; nil discards them. The binaries log to
	// stderr: stdout carries only the protocol.
	Logger *slog.Logger
	// MaxHandlers bounds the requests served at once; a request beyond it
	// is refused with TemporarilyUnavailable (definite: it was not run).
	MaxHandlers int
	// MaxLineBytes bounds one incoming line (a Raft snapshot travels in one).
	MaxLineBytes int
}

const (
	defaultMaxHandlers  = 4096
	defaultMaxLineBytes = 16 << 20
)

// ErrNotSent means a message was never written, so its receiver cannot
// have acted on it.
var ErrNotSent = errors.New("message not sent")

// Node is one Maelstrom process: it reads messages, runs handlers by
// message type (each in its own goroutine, bounded), matches replies to the
// RPCs awaiting them by msg_id, and writes messages one line at a time.
type Node struct {
	opts     Options
	log      *slog.Logger
	handlers map[string]Handler
	onInit   InitFunc
	sem      chan struct{}

	mu        sync.Mutex
	id        string
	nodeIDs   []string
	nextMsgID int
	callbacks map[int]chan Message

	outMu sync.Mutex
	out   *bufio.Writer // nil outside Run
}

// NewNode returns a node with no handlers.
func NewNode(opts Options) *Node {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxHandlers <= 0 {
		opts.MaxHandlers = defaultMaxHandlers
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = defaultMaxLineBytes
	}
	return &Node{
		opts: opts, log: opts.Logger, handlers: make(map[string]Handler),
		sem: make(chan struct{}, opts.MaxHandlers), callbacks: make(map[int]chan Message),
	}
}

// Handle registers h for messages of type typ. It panics on a duplicate
// type or on "init" (use OnInit), as both are programming errors.
func (n *Node) Handle(typ string, h Handler) {
	if typ == "init" {
		panic("maelstrom: init is handled by the node; use OnInit")
	}
	if _, dup := n.handlers[typ]; dup {
		panic(fmt.Sprintf("maelstrom: duplicate handler for message type %q", typ))
	}
	n.handlers[typ] = h
}

// OnInit sets the function run when init arrives.
func (n *Node) OnInit(fn InitFunc) { n.onInit = fn }

// Init sets the node's identity, as init does; tests may call it directly.
func (n *Node) Init(id string, nodeIDs []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.id, n.nodeIDs = id, append([]string(nil), nodeIDs...)
}

// ID is this node's id, "" before init.
func (n *Node) ID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.id
}

// NodeIDs lists every node of the cluster, this one included, in init's order.
func (n *Node) NodeIDs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.nodeIDs...)
}

// Run reads messages from in until EOF or ctx ends, writing to out. At EOF
// it cancels the handlers' context and waits for them. It returns an error
// only when the input cannot be read.
func (n *Node) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		n.outMu.Lock()
		n.out = nil
		n.outMu.Unlock()
	}()
	n.outMu.Lock()
	n.out = bufio.NewWriter(out)
	n.outMu.Unlock()

	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), n.opts.MaxLineBytes)
	for sc.Scan() {
		if ctx.Err() != nil {
			return nil
		}
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var msg Message
		if err := json.Unmarshal(line, &msg); err != nil {
			n.log.Warn("dropping a line that is not a message", "err", err, "line", truncate(line))
			continue
		}
		n.dispatch(ctx, &wg, msg)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read messages: %w", err)
	}
	return nil
}

// dispatch routes one message: replies to their RPC, init inline, and
// requests to their handler in a new goroutine.
func (n *Node) dispatch(ctx context.Context, wg *sync.WaitGroup, msg Message) {
	h, err := msg.Header()
	if err != nil {
		n.log.Warn("dropping a message whose body does not decode", "err", err)
		return
	}
	if h.InReplyTo != nil {
		n.deliver(*h.InReplyTo, msg)
		return
	}
	if h.Type == "init" {
		n.init(ctx, msg)
		return
	}
	if n.ID() == "" {
		n.replyError(msg, NewError(TemporarilyUnavailable, "node not initialized"))
		return
	}
	handler, ok := n.handlers[h.Type]
	if !ok {
		n.replyError(msg, NewError(NotSupported, fmt.Sprintf("message type %q is not supported", h.Type)))
		return
	}
	select {
	case n.sem <- struct{}{}:
	default:
		n.replyError(msg, NewError(TemporarilyUnavailable, "too many requests in flight"))
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { <-n.sem }()
		body, err := handler(ctx, msg)
		switch {
		case err != nil:
			n.replyError(msg, err)
		case body != nil:
			if err := n.Reply(msg, body); err != nil {
				n.log.Warn("reply failed", "type", h.Type, "err", err)
			}
		}
	}()
}

type initBody struct {
	NodeID  string   `json:"node_id"`
	NodeIDs []string `json:"node_ids"`
}

func (n *Node) init(ctx context.Context, msg Message) {
	var b initBody
	if err := json.Unmarshal(msg.Body, &b); err != nil || b.NodeID == "" {
		n.replyError(msg, NewError(MalformedRequest, "init needs node_id and node_ids"))
		return
	}
	n.Init(b.NodeID, b.NodeIDs)
	if n.onInit != nil {
		if err := n.onInit(ctx, b.NodeID, b.NodeIDs); err != nil {
			n.replyError(msg, err)
			return
		}
	}
	n.log.Info("initialized", "node", b.NodeID, "nodes", b.NodeIDs)
	if err := n.Reply(msg, map[string]string{"type": "init_ok"}); err != nil {
		n.log.Warn("init_ok not sent", "err", err)
	}
}

// replyError answers msg with err, as a Crash unless err is an *Error.
func (n *Node) replyError(msg Message, err error) {
	var e *Error
	if !errors.As(err, &e) {
		n.log.Warn("handler failed; answering crash", "type", msg.Type(), "err", err)
		e = NewError(Crash, err.Error())
	}
	if rerr := n.Reply(msg, e.body()); rerr != nil {
		n.log.Warn("error reply failed", "type", msg.Type(), "err", rerr)
	}
}

// deliver hands a reply to the RPC waiting for it; a reply nobody waits
// for (its RPC gave up) is dropped.
func (n *Node) deliver(inReplyTo int, msg Message) {
	n.mu.Lock()
	ch := n.callbacks[inReplyTo]
	delete(n.callbacks, inReplyTo)
	n.mu.Unlock()
	if ch == nil {
		n.log.Debug("dropping a reply nobody waits for", "in_reply_to", inReplyTo, "src", msg.Src)
		return
	}
	ch <- msg // capacity 1, and each id is delivered at most once
}

// Reply answers req with body, setting in_reply_to to req's msg_id. A
// request without msg_id gets no reply: there is nothing to reply to.
func (n *Node) Reply(req Message, body any) error {
	h, err := req.Header()
	if err != nil {
		return err
	}
	if h.MsgID == nil {
		return nil
	}
	return n.send(req.Src, body, h.MsgID)
}

// Send sends body to dest with a fresh msg_id, expecting no reply.
func (n *Node) Send(dest string, body any) error {
	return n.send(dest, body, nil)
}

func (n *Node) send(dest string, body any, inReplyTo *int) error {
	id := n.newMsgID()
	raw, err := withKeys(body, &id, inReplyTo)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	_, err = n.write(dest, raw)
	return err
}

func (n *Node) newMsgID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nextMsgID++
	return n.nextMsgID
}

// write puts one message on the output. Once any byte may have been
// written the error no longer wraps ErrNotSent.
func (n *Node) write(dest string, body json.RawMessage) (bool, error) {
	line, err := json.Marshal(Message{Src: n.ID(), Dest: dest, Body: body})
	if err != nil {
		return false, fmt.Errorf("%w: encode message: %w", ErrNotSent, err)
	}
	n.outMu.Lock()
	defer n.outMu.Unlock()
	if n.out == nil {
		return false, fmt.Errorf("%w: node is not running", ErrNotSent)
	}
	line = append(line, '\n')
	if _, err := n.out.Write(line); err != nil {
		return true, fmt.Errorf("write message: %w", err)
	}
	if err := n.out.Flush(); err != nil {
		return true, fmt.Errorf("write message: %w", err)
	}
	return true, nil
}

// RPC sends body to dest and waits for the reply or ctx's end. An error
// reply comes back as the message and its *Error. When ctx ends first the
// error wraps ctx.Err(): the request may or may not have been acted on,
// unless the error also wraps ErrNotSent.
func (n *Node) RPC(ctx context.Context, dest string, body any) (Message, error) {
	id := n.newMsgID()
	raw, err := withKeys(body, &id, nil)
	if err != nil {
		return Message{}, fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	ch := make(chan Message, 1)
	n.mu.Lock()
	n.callbacks[id] = ch
	n.mu.Unlock()
	forget := func() {
		n.mu.Lock()
		delete(n.callbacks, id)
		n.mu.Unlock()
	}
	if _, err := n.write(dest, raw); err != nil {
		forget()
		return Message{}, err
	}
	select {
	case reply := <-ch:
		if e := reply.Err(); e != nil {
			return reply, e
		}
		return reply, nil
	case <-ctx.Done():
		forget()
		return Message{}, fmt.Errorf("rpc %d to %s: %w", id, dest, ctx.Err())
	}
}

// truncate shortens a line for logging.
func truncate(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
