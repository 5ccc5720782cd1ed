package node

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// proposeWindow groups proposals (Config.ProposeWindow): at most depth
// groups are in raft at once, and proposals arriving meanwhile queue and go
// to raft together, back to back, when a group finishes. raft's leader loop
// then takes each group as one batch: one log write and fsync on the
// leader and one AppendEntries (one fsync) per follower, instead of one per
// proposal or two. Without it, under steady load the leader loop takes
// about one proposal per batch (EXPERIMENTS.md §11): every proposal pays
// its own fsyncs on every replica.
type proposeWindow struct {
	depth int

	mu       sync.Mutex
	inflight int         // groups sent to raft and not yet finished
	queue    []*proposal // waiting for a free slot
}

// proposal is one command on its way to raft.
type proposal struct {
	data    []byte
	timeout time.Duration
	future  chan raft.ApplyFuture // capacity 1: raft's future, once sent
	// closes is set (before future is sent) on the last proposal of a
	// group: its owner reports the group finished once its future resolves.
	closes bool
}

func newProposal(data []byte, timeout time.Duration) *proposal {
	return &proposal{data: data, timeout: timeout, future: make(chan raft.ApplyFuture, 1)}
}

// applier is what the window needs of raft (*raft.Raft; a fake in tests).
type applier interface {
	Apply(cmd []byte, timeout time.Duration) raft.ApplyFuture
}

// apply sends data to raft through the window and waits for the entry's
// outcome; the proposal that closes a group then frees its slot.
func (w *proposeWindow) apply(r applier, data []byte, timeout time.Duration) raft.ApplyFuture {
	p := newProposal(data, timeout)
	w.submit(r, p)
	f := <-p.future
	_ = f.Error() // waits for the entry; the caller reads the error again
	if p.closes {
		w.finished(r)
	}
	return f
}

// submit queues p and sends the queue to raft if a slot is free; otherwise
// the group in flight that finishes first sends it.
func (w *proposeWindow) submit(r applier, p *proposal) {
	w.mu.Lock()
	w.queue = append(w.queue, p)
	if w.inflight >= w.depth {
		w.mu.Unlock()
		return
	}
	group := w.takeLocked()
	w.mu.Unlock()
	send(r, group)
}

// finished frees the slot of a group whose last proposal resolved (entries
// apply in log order, so the whole group has) and sends what queued.
func (w *proposeWindow) finished(r applier) {
	w.mu.Lock()
	w.inflight--
	if len(w.queue) == 0 {
		w.mu.Unlock()
		return
	}
	group := w.takeLocked()
	w.mu.Unlock()
	send(r, group)
}

func (w *proposeWindow) takeLocked() []*proposal {
	group := w.queue
	w.queue = nil
	w.inflight++
	group[len(group)-1].closes = true
	return group
}

func send(r applier, group []*proposal) {
	for _, p := range group {
		p.future <- r.Apply(p.data, p.timeout)
	}
}
