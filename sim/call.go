package sim

import (
	"context"
	"fmt"
	"slices"
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
// Errors: ErrUnreachable or ErrTimeout when no answer came within
// Options.CallTimeout (or before ctx ended, then ctx.Err() is wrapped too),
// ErrRemote with the handler's error text, or ErrClosed.
func (n *Network) Call(ctx context.Context, from, to string, req []byte) ([]byte, error) {
	timer := time.NewTimer(n.opts.CallTimeout)
	defer timer.Stop()
	reply := make(chan callReply, 1)
	lost := make(chan lossReason, 1)
	m := message{from: from, to: to, what: "call request", lost: lost}
	if ep := n.handler(to); ep == nil {
		n.refuse(m, lossNoEndpoint)
	} else {
		m.toDone = ep.done
		body := slices.Clone(req)
		n.post(m, func(dup bool) { n.serveCall(ep, m, body, dup, reply) })
	}
	what := fmt.Sprintf("sim: call %s->%s", from, to)
	select {
	case r := <-reply:
		if r.errMsg != "" {
			return nil, fmt.Errorf("%s: %w: %s", what, ErrRemote, r.errMsg)
		}
		return r.resp, nil
	case <-timer.C:
		return nil, lossError(what, lost)
	case <-ctx.Done():
		return nil, fmt.Errorf("%w (%w)", lossError(what, lost), ctx.Err())
	case <-n.done:
		return nil, ErrClosed
	}
}

// serveCall runs the handler for a delivered request and carries its answer
// back along the reverse link.
func (n *Network) serveCall(ep *handlerEndpoint, req message, body []byte, dup bool, reply chan<- callReply) {
	ctx, cancel := context.WithTimeout(context.Background(), n.opts.CallTimeout)
	defer cancel()
	// End the handler's context with its endpoint or the network; the
	// goroutine exits at the latest when cancel runs.
	go func() {
		select {
		case <-ep.done:
		case <-n.done:
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
	back := message{from: req.to, to: req.from, what: "call response", fromDone: ep.done, lost: req.lost}
	if n.transmit(back) {
		select {
		case reply <- out:
		default:
		}
	}
}
