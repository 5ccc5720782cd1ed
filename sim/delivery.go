package sim

import (
	"fmt"
	"time"
)

// lossReason says why a message copy was lost.
type lossReason string

const (
	lossRandom     lossReason = "random drop"
	lossPartition  lossReason = "partitioned at send"
	lossInFlight   lossReason = "partitioned in flight"
	lossNoEndpoint lossReason = "no endpoint"
	lossClosed     lossReason = "endpoint closed"
	lossOverload   lossReason = "in-flight limit"
)

// unreachable reports whether the loss was due to the topology rather than
// chance, which decides between ErrUnreachable and ErrTimeout for the caller.
func (r lossReason) unreachable() bool {
	return r != lossRandom && r != lossOverload
}

// message is one message copy: its route, the lifetimes of its two ends and
// who to tell if it is lost.
type message struct {
	from, to string
	what     string          // e.g. "call", for events
	response bool            // a response to what, not the request
	fromDone <-chan struct{} // sender endpoint lifetime; nil for endpoint-less senders such as clients
	toDone   <-chan struct{} // receiver endpoint lifetime; nil for endpoint-less receivers
	lost     chan lossReason // optional, capacity 1: the first loss reason of the caller's exchange
}

// label names the message in events, e.g. "call request";
// formatted only for an event, not for every message.
func (m message) label() string {
	if m.response {
		return m.what + " response"
	}
	return m.what + " request"
}

// refuse counts a message that could not even be sent (no route or no
// endpoint) as sent and lost, keeping the Stats balance.
func (n *Network) refuse(m message, r lossReason) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.closed {
		n.stats.Sent++
		n.loseLocked(m, r)
	}
}

// lose counts and records a lost copy and tells its caller why.
func (n *Network) lose(m message, r lossReason) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.loseLocked(m, r)
}

func (n *Network) loseLocked(m message, r lossReason) {
	n.stats.Dropped++
	n.recordLocked(EventDrop, m.from, m.to, fmt.Sprintf("%s: %s", m.label(), r))
	if m.lost != nil {
		select {
		case m.lost <- r:
		default:
		}
	}
}

// admit makes the send-time checks and draws the message's fate. It reports
// false when the message is lost at once.
func (n *Network) admit(m message, mayDup bool) (decision, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return decision{}, false
	}
	n.stats.Sent++
	if !n.reachableLocked(m.from, m.to) {
		n.loseLocked(m, lossPartition)
		return decision{}, false
	}
	d := n.decideLocked(m.from, m.to, mayDup)
	if d.drop {
		n.loseLocked(m, lossRandom)
		return decision{}, false
	}
	if d.dup {
		n.stats.Duplicated++
		n.recordLocked(EventDuplicate, m.from, m.to, m.label())
	}
	return d, true
}

// post sends a request: each copy that arrives runs arrive on a goroutine
// of its own while it runs (dup is true for the duplicate), which may carry
// the response back with transmit. The number of copies in flight is
// bounded by MaxInFlight.
func (n *Network) post(m message, arrive func(dup bool)) {
	d, ok := n.admit(m, true)
	if !ok {
		return
	}
	n.launch(m, d.latency, false, arrive)
	if d.dup {
		m.lost = nil // only the original copy's fate explains the caller's error
		n.launch(m, d.dupLatency, true, arrive)
	}
}

func (n *Network) launch(m message, latency time.Duration, dup bool, arrive func(dup bool)) {
	select {
	case n.slots <- struct{}{}:
	default:
		n.lose(m, lossOverload)
		return
	}
	n.run(func() {
		defer func() { <-n.slots }()
		if n.carry(m, latency) {
			arrive(dup)
		}
	})
}

// run runs job on an idle worker goroutine, or on a new one when none is
// idle. A message copy's goroutine ends up deep in a handler (HTTP, JSON,
// a Raft proposal); a fresh goroutine would grow its stack, by copying,
// for every message, whereas a worker keeps the stack it has grown. Each
// job still has a goroutine to itself: a worker takes the next job only
// after finishing the last, so no message waits behind another.
func (n *Network) run(job func()) {
	select {
	case n.jobs <- job:
	default:
		go n.work(job)
	}
}

// work runs job and then whatever job it is handed next, until the
// network closes.
func (n *Network) work(job func()) {
	for {
		job()
		select {
		case job = <-n.jobs:
		case <-n.done:
			return
		}
	}
}

// transmit sends a response in the calling goroutine and reports whether it arrived.
func (n *Network) transmit(m message) bool {
	d, ok := n.admit(m, false)
	return ok && n.carry(m, d.latency)
}

// carry moves one admitted copy: it is held while the sender is paused,
// travels for latency, is held while the receiver is paused, and is then
// delivered unless the receiver closed or the link was cut meanwhile.
func (n *Network) carry(m message, latency time.Duration) bool {
	if !n.holdWhilePaused(m.from, m.fromDone) {
		return n.loseUnlessClosed(m, lossClosed)
	}
	if latency > 0 {
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-n.done:
			return false
		}
	}
	if !n.holdWhilePaused(m.to, m.toDone) {
		return n.loseUnlessClosed(m, lossClosed)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.closed:
		return false
	case isClosed(m.toDone):
		n.loseLocked(m, lossClosed)
		return false
	case !n.reachableLocked(m.from, m.to):
		n.loseLocked(m, lossInFlight)
		return false
	}
	n.stats.Delivered++
	return true
}

// loseUnlessClosed records a loss unless the whole network is shutting down,
// when nothing is counted any more. It always reports false.
func (n *Network) loseUnlessClosed(m message, r lossReason) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.closed {
		n.loseLocked(m, r)
	}
	return false
}

// holdWhilePaused blocks while node id is paused. It reports false if the
// network closed or the endpoint's lifetime ended first.
func (n *Network) holdWhilePaused(id string, endpointDone <-chan struct{}) bool {
	for {
		n.mu.Lock()
		resumed, paused := n.paused[id]
		if paused {
			n.stats.Held++
		}
		n.mu.Unlock()
		if !paused {
			return !isClosed(n.done)
		}
		var ok bool
		select {
		case <-resumed:
			ok = true
		case <-endpointDone:
		case <-n.done:
		}
		n.mu.Lock()
		n.stats.Held--
		n.mu.Unlock()
		if !ok {
			return false
		}
	}
}

func isClosed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// lossError turns the first recorded loss of an exchange into the caller's error.
func lossError(what string, lost <-chan lossReason) error {
	select {
	case r := <-lost:
		if r.unreachable() {
			return fmt.Errorf("%s: %w (%s)", what, ErrUnreachable, r)
		}
	default:
	}
	return fmt.Errorf("%s: %w", what, ErrTimeout)
}
