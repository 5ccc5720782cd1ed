package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/codec"
)

// proposer turns the commands this leader proposes (its own callers' and
// those other members forward to it) into log entries. While depth entries
// are in Raft (handed to raft.Apply, not yet applied), arriving commands
// queue; as soon as one applies, the next entry takes every command that
// queued meanwhile. Under load one entry then carries many commands: one
// leader store, one AppendEntries per follower, one state machine step and
// one future for all of them, instead of one each. A command that finds
// fewer than depth entries in Raft goes at once, alone, so a FIFO hand-off
// (a release granting the next waiter) never waits for a batch to fill.
//
// The commands arrive encoded (codec.AppendCommand, on the member that took
// the request) and go into the entry as they are; the leader adds only its
// stamp (clock reading and suspects) in the entry's header.
type proposer struct {
	raft    applier
	depth   int
	stamp   func() codec.Stamp
	timeout time.Duration

	mu          sync.Mutex
	queue       []*proposal
	inflight    int // entries handed to raft and not yet resolved
	closed      bool
	kick        chan struct{}       // capacity 1: the queue grew or an entry resolved
	entries     chan *entryInFlight // to complete, in log order; capacity depth
	stop        <-chan struct{}     // closed when the node shuts down
	finished    chan struct{}       // closed once every entry handed to raft resolved
	maxCommands int
	maxBytes    int
}

// applier is what the proposer needs of raft (*raft.Raft; a fake in tests).
type applier interface {
	Apply(cmd []byte, timeout time.Duration) raft.ApplyFuture
}

// Batch bounds: an entry stays a modest write and AppendEntries payload.
const (
	defaultEntryCommands = 1024
	defaultEntryBytes    = 256 << 10
)

// proposal is one command on its way to the log.
type proposal struct {
	ctx       context.Context
	cmd       []byte
	submitted time.Time
	result    chan proposed // capacity 1
}

// proposed is a proposal's outcome: the state machine's answer for its
// command, or why its entry never got one (err: classified as for the
// caller, ErrNotLeader, ErrUnavailable or ErrIndeterminate).
type proposed struct {
	ap  applied
	err error
	// called and returned bracket the entry's raft.Apply to its resolution.
	called, returned time.Time
}

type entryInFlight struct {
	future    raft.ApplyFuture
	proposals []*proposal
	called    time.Time
}

func newProposer(r applier, depth int, stamp func() codec.Stamp, timeout time.Duration, stop <-chan struct{}) *proposer {
	p := &proposer{raft: r, depth: max(depth, 1), stamp: stamp, timeout: timeout,
		kick: make(chan struct{}, 1), entries: make(chan *entryInFlight, max(depth, 1)),
		stop: stop, finished: make(chan struct{}), maxCommands: defaultEntryCommands, maxBytes: defaultEntryBytes}
	go p.run()
	go p.complete()
	return p
}

// submit proposes cmd and waits for its outcome. It always gets one: the
// proposer answers every queued proposal, ErrShutdown once the node stops.
func (p *proposer) submit(ctx context.Context, cmd []byte) proposed {
	pr := &proposal{ctx: ctx, cmd: cmd, submitted: time.Now(), result: make(chan proposed, 1)}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return proposed{err: ErrShutdown}
	}
	p.queue = append(p.queue, pr)
	p.mu.Unlock()
	p.wake()
	return <-pr.result
}

func (p *proposer) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run sends entries to raft while there is room, until the node stops.
func (p *proposer) run() {
	defer close(p.entries)
	for {
		select {
		case <-p.stop:
			p.close()
			return
		case <-p.kick:
		}
		for p.next() {
		}
	}
}

// close refuses new proposals and answers the queued ones: none reached raft.
func (p *proposer) close() {
	p.mu.Lock()
	queued := p.queue
	p.queue, p.closed = nil, true
	p.mu.Unlock()
	for _, pr := range queued {
		pr.result <- proposed{err: ErrShutdown}
	}
}

// next sends one entry of queued commands to raft, if the queue holds any
// and fewer than depth entries are in raft. It reports whether to go on.
func (p *proposer) next() bool {
	p.mu.Lock()
	if len(p.queue) == 0 || p.inflight >= p.depth {
		p.mu.Unlock()
		return false
	}
	var batch []*proposal
	var expired []*proposal
	size, taken := 0, 0
	for _, pr := range p.queue {
		if len(batch) > 0 && (len(batch) >= p.maxCommands || size+len(pr.cmd) > p.maxBytes) {
			break
		}
		taken++
		if pr.ctx.Err() != nil {
			expired = append(expired, pr)
			continue
		}
		batch = append(batch, pr)
		size += len(pr.cmd)
	}
	p.queue = append(p.queue[:0], p.queue[taken:]...)
	if len(batch) > 0 {
		p.inflight++
	}
	p.mu.Unlock()
	for _, pr := range expired {
		pr.result <- proposed{err: fmt.Errorf("%w: deadline passed before proposing: %w", ErrUnavailable, pr.ctx.Err())}
	}
	if len(batch) == 0 {
		return true
	}
	cmds := make([][]byte, len(batch))
	for i, pr := range batch {
		cmds[i] = pr.cmd
	}
	data := codec.AppendEntry(make([]byte, 0, size+16+8*len(batch)), p.stamp(), cmds)
	called := time.Now()
	p.entries <- &entryInFlight{future: p.raft.Apply(data, p.timeout), proposals: batch, called: called}
	return true
}

// complete waits for each entry in turn (they resolve in log order) and
// answers its proposals.
func (p *proposer) complete() {
	defer close(p.finished)
	for e := range p.entries {
		err := e.future.Error()
		returned := time.Now()
		var results []applied
		if err == nil {
			var ok bool
			results, ok = e.future.Response().([]applied)
			if !ok || len(results) != len(e.proposals) {
				err = fmt.Errorf("%w: unexpected apply response %T for %d commands", ErrIndeterminate, e.future.Response(), len(e.proposals))
			}
		} else {
			err = ApplyError(err)
		}
		for i, pr := range e.proposals {
			out := proposed{err: err, called: e.called, returned: returned}
			if err == nil {
				out.ap = results[i]
			}
			pr.result <- out
		}
		p.mu.Lock()
		p.inflight--
		p.mu.Unlock()
		p.wake()
	}
}

// ApplyError says what raft's refusal of an entry (raft.Apply's future
// error) means for its commands: ErrNotLeader, ErrUnavailable (surely not
// applied) or ErrIndeterminate (it may still commit: leadership lost, raft
// shut down after taking it). The metadata group classifies by it too.
func ApplyError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return ErrNotLeader
	case errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		// Both refuse the entry before it reaches the log (a leader handing
		// its group over takes no new entries), so its commands surely did
		// not apply.
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	default:
		return fmt.Errorf("%w: %w", ErrIndeterminate, err)
	}
}
