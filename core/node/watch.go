package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

// Watch errors.
var (
	// ErrCompacted means the events a watch asked for are no longer in this
	// member's history (they were evicted, or the member restored a
	// snapshot past them): the watcher must re-read status and watch on
	// from now. Like etcd's ErrCompacted, never a silent gap.
	ErrCompacted = errors.New("watch history compacted")
	// ErrTooManyWatchers means the group already serves its bound of watches.
	ErrTooManyWatchers = errors.New("too many watches")
)

// Defaults of the watch history.
const (
	// DefaultWatchHistory is how many events a group keeps for watchers
	// that resume: a few seconds of a busy shard, about a megabyte.
	DefaultWatchHistory = 8192
	// maxWatchers bounds the watches one group serves at once.
	maxWatchers = 4096
	// maxBatch bounds the entries one Next returns.
	maxBatch = 256
)

// WatchedEntry is the watchable events of one applied log entry.
type WatchedEntry struct {
	Index  uint64
	Events []lock.Event
}

// history is a group's bounded record of recent events, in log order, fed
// by apply. Every member applies the same entries and so records the same
// events under the same indexes: a watcher may resume on another member.
type history struct {
	mu sync.Mutex
	// limit bounds the events held.
	limit int
	// entries[head:] are held, ascending by index; held counts their events.
	entries []WatchedEntry
	head    int
	held    int
	// floor is the highest index whose events may be missing here: an
	// evicted entry, or the snapshot this member last restored.
	floor uint64
	// last is the highest command index applied.
	last uint64
	// changed is closed by the next record or reset, waking every watch
	// that read up to the end; nil while none waits, so that apply pays
	// nothing for idle history and one close for any number of watches.
	changed chan struct{}
	// watchers counts open watches (bounded by maxWatchers).
	watchers int
}

func newHistory(limit int) *history {
	return &history{limit: limit}
}

// watchable reports whether watchers see an event kind: grants, releases,
// expirations and queue changes. Renewals (keep-alive traffic) and the
// internal freed signal would only push useful history out of the ring.
func watchable(k lock.EventKind) bool {
	switch k {
	case lock.EventEnqueue, lock.EventGrant, lock.EventRelease, lock.EventExpire, lock.EventCancel, lock.EventJoin,
		lock.EventGrace, lock.EventRevive:
		return true
	}
	return false
}

// record adds the events of the command entry at index. It runs on the
// apply path: it copies (apply reuses its slice) and never blocks.
func (h *history) record(index uint64, events []lock.Event) {
	n := 0
	for _, ev := range events {
		if watchable(ev.Kind) {
			n++
		}
	}
	var kept []lock.Event
	if n > 0 {
		kept = make([]lock.Event, 0, n)
		for _, ev := range events {
			if watchable(ev.Kind) {
				kept = append(kept, ev)
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = max(h.last, index)
	if len(kept) == 0 {
		return
	}
	h.entries = append(h.entries, WatchedEntry{Index: index, Events: kept})
	h.held += len(kept)
	for h.held > h.limit && h.head < len(h.entries)-1 {
		old := h.entries[h.head]
		h.entries[h.head] = WatchedEntry{}
		h.head++
		h.held -= len(old.Events)
		h.floor = max(h.floor, old.Index)
	}
	if h.head > len(h.entries)/2 {
		// Slide the live half down in place: the array is reused, so a
		// full ring allocates nothing but the events it copies.
		n := copy(h.entries, h.entries[h.head:])
		clear(h.entries[n:])
		h.entries, h.head = h.entries[:n], 0
	}
	h.signal()
}

// reset forgets everything: the member restored a snapshot that ends at
// index, and what happened up to it is not known here.
func (h *history) reset(index uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries, h.head, h.held = nil, 0, 0
	h.floor, h.last = index, index
	h.signal()
}

func (h *history) signal() {
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
}

// since returns the held entries from index from on, at most maxBatch of
// them, the index to read next, and a channel closed when more may have
// come; ErrCompacted when some entries from from on are not held.
func (h *history) since(from uint64) ([]WatchedEntry, uint64, <-chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if from <= h.floor {
		return nil, from, nil, fmt.Errorf("%w: events from index %d on are needed, this member holds them from %d on",
			ErrCompacted, from, h.floor+1)
	}
	live := h.entries[h.head:]
	lo, hi := 0, len(live)
	for lo < hi {
		mid := (lo + hi) / 2
		if live[mid].Index < from {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	out := live[lo:min(len(live), lo+maxBatch)]
	next := max(from, h.last+1)
	if len(out) == maxBatch {
		next = out[len(out)-1].Index + 1
	}
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return append([]WatchedEntry(nil), out...), next, h.changed, nil
}

// Watcher follows one group's applied events from an index on. It is
// served from this member's own applied log, so on a follower it trails
// the leader but never skips or reorders.
type Watcher struct {
	h      *history
	done   <-chan struct{}
	next   uint64
	closed bool
}

// watchEndCheck bounds the read-index round of a watch that starts past
// this member's applied log.
const watchEndCheck = time.Second

// Watch starts following the group's events from index from on; from 0
// starts after the last entry applied here. ErrCompacted when from is
// older than this member's history; lock.ErrInvalid when it is beyond the
// end of the group's log (checkWatchStart).
func (n *Node) Watch(ctx context.Context, from uint64) (*Watcher, error) {
	if err := n.checkWatchStart(ctx, from); err != nil {
		return nil, fmt.Errorf("group %s: %w", n.cfg.Group, err)
	}
	w, err := n.fsm.history.open(from, n.done)
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", n.cfg.Group, err)
	}
	return w, nil
}

// checkWatchStart refuses a start beyond the end of the group's log, which
// would otherwise wait for an entry that may never come. Log indexes are
// not revisions a client can foresee (every resource's entries, no-ops and
// configurations share them), so such a start is a mistake: an index from
// another shard, or from a cluster since wiped. A start past only this
// member's applied log is a watcher resuming from a member further ahead:
// it is accepted, and the watch waits for this member to catch up. Only
// then is the leader asked (ReadIndex) where the log ends; when it cannot
// say, the watch is refused as unavailable rather than left waiting.
func (n *Node) checkWatchStart(ctx context.Context, from uint64) error {
	next := n.fsm.history.next()
	if from <= next {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, watchEndCheck)
	defer cancel()
	ri, err := n.ReadIndex(ctx)
	if err != nil {
		return fmt.Errorf("%w: start index %d is past this member's applied log (next index %d) and the leader could not say where the log ends: %v",
			ErrUnavailable, from, next, err)
	}
	if from > ri.Commit+1 {
		return fmt.Errorf("%w: start index %d is beyond the end of the log: its last committed index is %d, so a start may be at most %d",
			lock.ErrInvalid, from, ri.Commit, ri.Commit+1)
	}
	return nil
}

// next is the index a watch from now starts at: after the last command
// applied here.
func (h *history) next() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last + 1
}

// open starts a watcher at from (0: after the last entry), within the
// bound on open watches.
func (h *history) open(from uint64, done <-chan struct{}) (*Watcher, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watchers >= maxWatchers {
		return nil, fmt.Errorf("%w: %d are open", ErrTooManyWatchers, maxWatchers)
	}
	if from == 0 {
		from = h.last + 1
	}
	if from <= h.floor {
		return nil, fmt.Errorf("%w: start index %d, this member holds events from %d on", ErrCompacted, from, h.floor+1)
	}
	h.watchers++
	return &Watcher{h: h, done: done, next: from}, nil
}

// Next blocks until entries at or after w's position have events that keep
// accepts, and returns those entries (only the kept events) in log order.
// It fails with ErrCompacted when the history lost entries w had not read,
// ErrShutdown when the node stops, or ctx's error.
func (w *Watcher) Next(ctx context.Context, keep func(lock.Event) bool) ([]WatchedEntry, error) {
	for {
		entries, next, changed, err := w.h.since(w.next)
		if err != nil {
			return nil, err
		}
		w.next = next
		var out []WatchedEntry
		for _, e := range entries {
			var evs []lock.Event
			for _, ev := range e.Events {
				if keep(ev) {
					evs = append(evs, ev)
				}
			}
			if len(evs) > 0 {
				out = append(out, WatchedEntry{Index: e.Index, Events: evs})
			}
		}
		if len(out) > 0 {
			return out, nil
		}
		if len(entries) == maxBatch {
			continue // a full batch of others' events: read on
		}
		select {
		case <-changed:
		case <-w.done:
			return nil, ErrShutdown
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Position is the index w reads next: a watcher that stops here resumes
// from it without a gap or a repeat.
func (w *Watcher) Position() uint64 { return w.next }

// Close stops w; it must not be used after.
func (w *Watcher) Close() {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	if !w.closed {
		w.closed = true
		w.h.watchers--
	}
}
