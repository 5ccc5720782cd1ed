package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// Handler serves one Call to a node. ctx ends Options.CallTimeout after the
// request arrives, when the handler is replaced or removed, or when the
// Network closes.
type Handler func(ctx context.Context, from string, req []byte) ([]byte, error)

// handlerEndpoint is one registration of a Handler; done ends it.
type handlerEndpoint struct {
	h    Handler
	done chan struct{}
}

// Handle registers h as node id's Call handler, replacing (and ending) any
// previous one; a nil h removes it. Re-registering models a restart.
func (n *Network) Handle(id string, h Handler) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if old := n.handlers[id]; old != nil {
		close(old.done)
		delete(n.handlers, id)
		n.recordLocked(EventDown, id, "", "handler")
	}
	if h != nil {
		n.handlers[id] = &handlerEndpoint{h: h, done: make(chan struct{})}
		n.recordLocked(EventUp, id, "", "handler")
	}
}

func (n *Network) handler(id string) *handlerEndpoint {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.handlers[id]
}

// callReply is a handler's answer in wire form: errors cross as text.
type callReply struct {
	resp   []byte
	errMsg string
}

// Call sends req from node (or client) from to node to's Handler over the
// simulated network, with the same latency, loss, duplication, partition and
// pause rules as raft RPCs. from need not be registered. A duplicated request
// runs the handler twice; the second answer is discarded.
//
// Call waits until ctx's deadline, or Options.CallTimeout when ctx has none.
// The handler's context ends when the caller stops waiting (as a server
// sees a closed connection), when the handler is replaced or removed, or
// when the Network closes.
//
// Errors: ErrUnreachable or ErrTimeout when no answer came in time (ctx.Err
// wrapped too when ctx ended), joined with ErrNotDelivered when the handler
// never saw the request (it surely had no effect); ErrRemote with the
// handler's error text; or ErrClosed.
func (n *Network) Call(ctx context.Context, from, to string, req []byte) ([]byte, error) {
	// With a ctx deadline, ctx alone bounds the wait.
	var timeout <-chan time.Time
	if _, ok := ctx.Deadline(); !ok {
		timer := time.NewTimer(n.opts.CallTimeout)
		defer timer.Stop()
		timeout = timer.C
	}
	ex := &callExchange{reply: make(chan callReply, 1), callerDone: make(chan struct{})}
	defer close(ex.callerDone)
	// The request and the response report their losses apart: only a lost
	// request that no copy of survived means the handler never ran. A
	// request still in flight when the caller gives up may yet arrive.
	lost := make(chan lossReason, 1)
	ex.responseLost = make(chan lossReason, 1)
	m := message{from: from, to: to, what: "call", lost: lost}
	if ep := n.handler(to); ep == nil {
		n.refuse(m, lossNoEndpoint)
	} else {
		m.toDone = ep.done
		body := slices.Clone(req)
		n.post(m, func(dup bool) { n.serveCall(ep, m, body, dup, ex) })
	}
	// what names the call in errors; formatted only for one.
	what := func() string { return fmt.Sprintf("sim: call %s->%s", from, to) }
	// reason is the first loss of the exchange: the request's, else the
	// response's.
	var requestLost bool
	reason := func() <-chan lossReason {
		out := make(chan lossReason, 1)
		select {
		case r := <-lost:
			requestLost = true
			out <- r
		default:
			select {
			case r := <-ex.responseLost:
				out <- r
			default:
			}
		}
		return out
	}
	fail := func(err error) error {
		if requestLost && !ex.delivered.Load() {
			return errors.Join(err, ErrNotDelivered)
		}
		return err
	}
	select {
	case r := <-ex.reply:
		if r.errMsg != "" {
			return nil, fmt.Errorf("%s: %w: %s", what(), ErrRemote, r.errMsg)
		}
		return r.resp, nil
	case <-timeout:
		return nil, fail(lossError(what(), reason()))
	case <-ctx.Done():
		return nil, fail(fmt.Errorf("%w (%w)", lossError(what(), reason()), ctx.Err()))
	case <-n.done:
		return nil, ErrClosed
	}
}

// callExchange is one Call as its handler copies see it.
type callExchange struct {
	reply        chan callReply
	callerDone   chan struct{}   // closed when Call returns
	delivered    atomic.Bool     // a copy reached the handler
	responseLost chan lossReason // why the response was lost, if it was
}

// serveCall runs the handler for a delivered request and carries its answer
// back along the reverse link.
func (n *Network) serveCall(ep *handlerEndpoint, req message, body []byte, dup bool, ex *callExchange) {
	ex.delivered.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// End the handler's context with its endpoint, the network or the
	// caller; the goroutine exits at the latest when cancel runs.
	go func() {
		select {
		case <-ep.done:
		case <-n.done:
		case <-ex.callerDone:
		case <-ctx.Done():
		}
		cancel()
	}()
	resp, err := ep.h(ctx, req.from, slices.Clone(body))
	if dup {
		return
	}
	out := callReply{resp: slices.Clone(resp)}
	if err != nil {
		out.errMsg = err.Error()
	}
	back := message{from: req.to, to: req.from, what: "call", response: true, fromDone: ep.done, lost: ex.responseLost}
	if n.transmit(back) {
		select {
		case ex.reply <- out:
		default:
		}
	}
}
