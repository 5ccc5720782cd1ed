package node

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/codec"
	"github.com/lockstep/lockstep/core/lock"
)

// fsm adapts the pure lock.State to raft.BatchingFSM. It owns the only lock
// around the state: apply, snapshots and local reads take it.
type fsm struct {
	mu     sync.Mutex
	state  *lock.State
	notify *notifier
	// onEvent sees every event in apply order (the simulator's trace).
	onEvent func(lock.Event)
	// applied sees each command entry after its events are dispatched;
	// restored sees the state a snapshot restored.
	applied  func(appliedEntry)
	restored func(*lock.State)
	// onApply is Hooks.OnApply.
	onApply func(index uint64, entry []byte, state *lock.State)
	// onPanic is Hooks.OnApplyPanic; broken is set once it was called:
	// the state may be half-changed, so nothing more is applied.
	onPanic func(index uint64, value any, stack []byte)
	broken  error
	// snapshots and restores count Snapshot and Restore calls (guarded by
	// mu), so a test can tell that snapshots were exercised.
	snapshots, restores uint64
	// timed makes Apply report stageTimes to proposers (Config.Stages or
	// Config.Tracer set).
	timed bool
	// history keeps recent events for watchers (watch.go).
	history *history
}

var (
	_ raft.FSM         = (*fsm)(nil)
	_ raft.BatchingFSM = (*fsm)(nil)
)

func newFSM(cfg lock.Config, n *notifier, onEvent func(lock.Event), historyLimit int) (*fsm, error) {
	st, err := lock.New(cfg)
	if err != nil {
		return nil, err
	}
	return &fsm{state: st, notify: n, onEvent: onEvent, history: newHistory(historyLimit)}, nil
}

// applied is the outcome of one command of an entry: the result, or why
// it could not be read or applied. An ApplyFuture's Response is the
// []applied of its entry, one per command in order.
type applied struct {
	res   lock.Result
	err   error
	times stageTimes
}

func (f *fsm) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

func (f *fsm) ApplyBatch(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	var batchStart time.Time
	if f.timed {
		batchStart = time.Now()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		e, err := codec.DecodeEntry(l.Data)
		if err != nil {
			// A corrupt entry is skipped on every replica alike; failing the
			// callers beats crashing the group.
			out[i] = []applied{{err: fmt.Errorf("entry %d: %w", l.Index, err)}}
			continue
		}
		results := make([]applied, len(e.Commands))
		var watched []lock.Event
		for slot := range e.Commands {
			results[slot], watched = f.applyCommand(l, e, slot, watched)
			if f.timed {
				results[slot].times = stageTimes{dispatched: l.AppendedAt, batchStart: batchStart, applied: time.Now()}
			}
		}
		// One record per entry, after all its commands: a watcher reading
		// between two commands would otherwise resume past the second.
		f.history.record(l.Index, watched)
		out[i] = results
		if f.onApply != nil && f.broken == nil {
			f.onApply(l.Index, l.Data, f.state)
		}
	}
	return out
}

// applyCommand applies command slot of entry e, stored as log l, hands its
// events on and appends the watchable ones to watched (lock.State reuses
// its events slice, so they are copied).
func (f *fsm) applyCommand(l *raft.Log, e codec.Entry, slot int, watched []lock.Event) (applied, []lock.Event) {
	cmd, err := e.Command(slot)
	if err != nil {
		// Skipped on every replica alike, as a corrupt entry is.
		return applied{err: fmt.Errorf("entry %d command %d: %w", l.Index, slot, err)}, watched
	}
	if f.broken != nil {
		return applied{err: f.broken}, watched
	}
	res, events, err := f.applyEntry(lock.Entry{Index: l.Index, Slot: slot, Term: l.Term, Command: cmd})
	if err != nil {
		return applied{err: err}, watched
	}
	for _, ev := range events {
		if watchable(ev.Kind) {
			watched = append(watched, ev)
		}
	}
	if len(events) > 0 {
		f.dispatch(l.Index, events)
	}
	if f.applied != nil {
		f.applied(appliedEntry{index: l.Index, term: l.Term, cmd: &cmd, res: res, events: events})
	}
	return applied{res: res}, watched
}

// applyEntry applies e; with onPanic set, a panic inside the state machine
// is reported and breaks the FSM instead of ending the process.
func (f *fsm) applyEntry(e lock.Entry) (res lock.Result, events []lock.Event, err error) {
	if f.onPanic != nil {
		defer func() {
			if v := recover(); v != nil {
				f.onPanic(e.Index, v, debug.Stack())
				f.broken = fmt.Errorf("entry %d: state machine panicked: %v", e.Index, v)
				res, events, err = lock.Result{}, nil, f.broken
			}
		}()
	}
	res, events = f.state.Apply(e)
	return res, events, nil
}

func (f *fsm) dispatch(index uint64, events []lock.Event) {
	if f.onEvent != nil {
		for _, ev := range events {
			f.onEvent(ev)
		}
	}
	f.notify.deliver(index, events)
}

// appliedEntry is one applied command: where its entry sits in the log
// (term as stored, whatever the state machine was told), what it said and
// what it did.
type appliedEntry struct {
	index, term uint64
	cmd         *lock.Command
	res         lock.Result
	events      []lock.Event
}

// read runs fn with the state locked, for local (possibly stale) reads.
func (f *fsm) read(fn func(*lock.State)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.state)
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return nil, f.broken // never persist a state a panic left half-changed
	}
	f.snapshots++
	return snapshot{frozen: f.state.Freeze(), fsm: f}, nil
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("read snapshot: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restores++
	if err := f.refuseRewind(b); err != nil {
		return err
	}
	if err := f.state.Restore(b); err != nil {
		return err
	}
	f.history.reset(f.state.Metrics().LastIndex)
	f.notify.restored(f.state.Status, f.state.Metrics().LogTime)
	if f.restored != nil {
		f.restored(f.state)
	}
	return nil
}

// errOlderSnapshot refuses a snapshot that would move the state back.
var errOlderSnapshot = errors.New("snapshot is older than this replica's state")

// refuseRewind fails a restore of a snapshot older than the state.
//
// Every entry a replica applied is committed, so a leader never needs to
// move it back; yet hashicorp/raft v1.7.2 restores whatever snapshot a
// leader sends, and a leader sends its own, older one after walking a
// follower's next index below its log start (see raftadapter's anchor.go).
// The rewound follower's raft then applies from the snapshot's index over
// a log compacted past it and panics "log not found". Refusing keeps the
// state and raft's applied index; the leader retries until it has a newer
// snapshot or the follower's log matches again.
func (f *fsm) refuseRewind(b []byte) error {
	index, err := lock.SnapshotIndex(b)
	if err != nil {
		return err
	}
	if have := f.state.Metrics().LastIndex; index < have {
		return fmt.Errorf("%w: it ends at entry %d, the state at %d", errOlderSnapshot, index, have)
	}
	return nil
}

// snapshot is a frozen state. Freezing under the FSM lock costs a pointer
// per 256 locks; encoding it is left to Persist, which raft runs on its
// snapshot goroutine while applies go on (16-22 ms per 100k leases when it
// was done here).
type snapshot struct {
	frozen *lock.Frozen
	fsm    *fsm
}

// copyBackStep is how many chunks Persist copies back per hold of the FSM
// lock: a few hundred microseconds at most, so applies barely wait.
const copyBackStep = 8

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	// First give the live state its own chunks, in small steps, so applies
	// do not pay for the copies themselves.
	for more := true; more; {
		s.fsm.mu.Lock()
		more = s.fsm.state.CopyBack(copyBackStep)
		s.fsm.mu.Unlock()
	}
	if _, err := sink.Write(s.frozen.Snapshot()); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("write snapshot: %w", err)
	}
	return sink.Close()
}

func (s snapshot) Release() {}
