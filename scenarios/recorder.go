package scenarios

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/core/codec"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/raftadapter"
	"github.com/lockstep/lockstep/nemesis"
)

// recorder collects everything a run observes: client operations, the
// committed state-machine events of every group (deduplicated across
// replicas), wake-ups, fault windows and fenced-store writes.
type recorder struct {
	start  time.Time
	fenced *checker.FencedStore
	// progress is RunOptions.Progress (nil: not watched).
	progress *atomic.Int64

	mu        sync.Mutex
	ops       []checker.Op
	lanes     int
	freeLanes []int
	trace     map[traceKey]checker.TraceEvent
	perNode   map[string]*nodeCursor
	// applied holds, per group and index, the first replica to apply it;
	// replicas checker.Replicas the comparisons with it.
	applied  map[traceKey]appliedAt
	replicas checker.Replicas
	// lastApplied is, per replica, the group, incarnation and highest
	// index of its current process; restarts what each ended process had
	// applied and stored, with tails (same order) the stored entries
	// judged once the committed log is known (Restart.Kept).
	lastApplied map[string]checker.Restart
	restarts    []checker.Restart
	tails       []storedTail
	entries     []checker.Entry
	wakeups     map[wakeKey]int
	faults      []checker.Fault
	panics      []checker.Panic
	// commands are the entries that say who holds callers, as the first
	// replica to apply each index read them; commanded marks the indexes.
	commands  []checker.Command
	commanded map[traceKey]bool
	// entriesClosed: the run is over; later entries are not listed.
	entriesClosed bool
}

var _ nemesis.Recorder = (*recorder)(nil)

type traceKey struct {
	group   int
	index   uint64
	ordinal int
}

type wakeKey struct {
	group    int
	index    uint64
	resource string
	// lease is the queued request woken; zero for a freed lock's racers.
	lease lock.LeaseID
}

// nodeCursor numbers the events one node emits for one log index.
type nodeCursor struct {
	index   uint64
	ordinal int
}

func newRecorder() *recorder {
	r := &recorder{
		start:   time.Now(),
		trace:   make(map[traceKey]checker.TraceEvent),
		perNode: make(map[string]*nodeCursor),
		applied: make(map[traceKey]appliedAt),
		wakeups: make(map[wakeKey]int),

		lastApplied: make(map[string]checker.Restart),

		commanded: make(map[traceKey]bool),
	}
	r.fenced = checker.NewFencedStore(r.now)
	return r
}

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

// touch tells a watchdog the run moved: the virtual time of the latest
// thing recorded.
func (r *recorder) touch() {
	if r.progress != nil {
		r.progress.Store(max(1, r.now()))
	}
}

// stopProgress tells the watchdog the run is over: what follows (the
// checks) takes wall time without virtual time passing.
func (r *recorder) stopProgress() {
	if r.progress != nil {
		r.progress.Store(-1)
	}
}

// takeLane hands out a Porcupine client id with no operation in flight:
// one freed by a definite answer, or a new one.
func (r *recorder) takeLane() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.freeLanes); n > 0 {
		lane := r.freeLanes[n-1]
		r.freeLanes = r.freeLanes[:n-1]
		return lane
	}
	r.lanes++
	return r.lanes - 1
}

// giveLane returns a lane after its operation; an unknown one never
// returns (Return = MaxInt64), so its lane is never reused.
func (r *recorder) giveLane(lane int, unknown bool) {
	if unknown {
		return
	}
	r.mu.Lock()
	r.freeLanes = append(r.freeLanes, lane)
	r.mu.Unlock()
}

func (r *recorder) op(o checker.Op) {
	r.touch()
	r.mu.Lock()
	r.ops = append(r.ops, o)
	r.mu.Unlock()
}

// event records one committed event seen on node. Every replica emits the
// same sequence per index; a replica that disagrees with what was recorded
// first has a different history for the same log position: lost state.
func (r *recorder) event(nodeID string, group int, ev lock.Event) {
	if ev.Kind == lock.EventFreed {
		return
	}
	te := checker.TraceEvent{
		Group: group, Index: ev.Index, Slot: ev.Slot, LogTime: ev.LogTime, Kind: ev.Kind.String(), Resource: ev.Resource,
		LeaseID: ev.Lease.ID.String(), Client: ev.Lease.ClientID, Mode: ev.Lease.Mode.String(),
		Token: ev.Lease.Token, ExpiresAt: ev.Lease.ExpiresAt, Grace: ev.Lease.GraceMs * int64(time.Millisecond), Hosts: ev.Hosts, Permits: int(ev.Permits), Deadlock: ev.Deadlock,
	}
	if !ev.Many.IsZero() {
		te.Many, te.ManySize = ev.Many.String(), ev.ManySize
	}
	r.traceEvent(nodeID, te)
}

// traceEvent numbers te within its index on nodeID and keeps the first
// replica's copy.
func (r *recorder) traceEvent(nodeID string, te checker.TraceEvent) {
	r.touch()
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.perNode[nodeID]
	if cur == nil {
		cur = &nodeCursor{}
		r.perNode[nodeID] = cur
	}
	if cur.index != te.Index {
		cur.index, cur.ordinal = te.Index, 0
	}
	key := traceKey{group: te.Group, index: te.Index, ordinal: cur.ordinal}
	cur.ordinal++
	if _, ok := r.trace[key]; !ok {
		r.trace[key] = te // replicas are compared entry by entry in apply
	}
}

// appliedAt is what one replica left at one index.
type appliedAt struct {
	node         string
	entry, state uint64
}

// maxMismatches bounds the replica mismatches kept (the rest are counted
// only by Compared).
const maxMismatches = 50

// apply compares what node applied at index, and the state it left, with
// the first replica of its group that applied that index.
func (r *recorder) apply(node string, group int, index uint64, entry []byte, st *lock.State) {
	a := appliedAt{node: node, entry: fnv64(entry), state: replicaDigest(st)}
	r.command(group, index, entry)
	r.recordApplied(node, group, index, a, st.Metrics().LogTime, time.Now())
}

// command keeps the caller stamps of the commands of the entry at (group,
// index) the first time a replica applies it (checker.Command).
func (r *recorder) command(group int, index uint64, entry []byte) {
	key := traceKey{group: group, index: index}
	r.mu.Lock()
	seen := r.commanded[key]
	r.commanded[key] = true
	r.mu.Unlock()
	if seen {
		return
	}
	e, err := codec.DecodeEntry(entry)
	if err != nil {
		return // a corrupt entry is skipped by every replica alike
	}
	for slot := range e.Commands {
		cmd, err := e.Command(slot)
		if err != nil {
			continue // so is a corrupt command
		}
		if c, ok := callerStamps(group, index, slot, &cmd); ok {
			r.mu.Lock()
			r.commands = append(r.commands, c)
			r.mu.Unlock()
		}
	}
}

// callerStamps is what the checks of callers read of one command, if any.
func callerStamps(group int, index uint64, slot int, cmd *lock.Command) (checker.Command, bool) {
	c := checker.Command{Group: group, Index: index, Slot: slot, Suspects: cmd.Suspects, Host: cmd.Host, Incarnation: cmd.Incarnation}
	switch {
	case cmd.Op == lock.OpAcquire:
		c.Op, c.Client, c.RequestID, c.LeaseID, c.WaitMs = checker.CommandAcquire, cmd.ClientID, cmd.RequestID, cmd.LeaseID.String(), cmd.WaitMs
	case cmd.Op == lock.OpHello:
		c.Op = checker.CommandHello
	case cmd.Op == lock.OpCancel:
		c.Op, c.LeaseID, c.Owner = checker.CommandCancel, cmd.LeaseID.String(), ownerOf(cmd.Owner)
		if len(cmd.Resources) > 0 {
			c.Op = checker.CommandCancelMany
		}
	case len(cmd.Suspects) > 0:
		c.Op, c.Host, c.Incarnation = cmd.Op.String(), "", 0
	default:
		return c, false
	}
	return c, true
}

// ownerOf renders a cancel's attempt owner for the history ("" for none).
func ownerOf(id lock.LeaseID) string {
	if id.IsZero() {
		return ""
	}
	return id.String()
}

// recordApplied is apply with the hashes taken (real processes send them).
func (r *recorder) recordApplied(node string, group int, index uint64, a appliedAt, logTime int64, at time.Time) {
	r.touch()
	r.mu.Lock()
	defer r.mu.Unlock()
	if last := r.lastApplied[node]; index > last.Applied {
		last.Group, last.Applied = group, index
		r.lastApplied[node] = last
	}
	key := traceKey{group: group, index: index}
	first, ok := r.applied[key]
	if !ok {
		r.applied[key] = a
		if !r.entriesClosed {
			r.entries = append(r.entries, checker.Entry{Group: group, Index: index, LogTime: logTime, At: int64(at.Sub(r.start))})
		}
		return
	}
	r.replicas.Compared++
	if first.entry == a.entry && first.state == a.state {
		return
	}
	if len(r.replicas.Mismatches) < maxMismatches {
		r.replicas.Mismatches = append(r.replicas.Mismatches, checker.ReplicaMismatch{
			Group: group, Index: index, Node: node, First: first.node, EntryDiffers: first.entry != a.entry,
		})
	}
}

func fnv64(b []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64()
}

// closeEntries stops listing applied entries (History.Entries): the
// cluster is shutting down.
func (r *recorder) closeEntries() {
	r.mu.Lock()
	r.entriesClosed = true
	r.mu.Unlock()
}

// restarted forgets node's event cursor: a restarted node applies again
// from its last snapshot, and its events must line up with what the
// replicas emitted at those indexes, not continue the old numbering.
// It also records what node's ended process, a replica of group, had
// applied and (st, when the harness can read its stores) stored
// (History.Restarts), under the host name the trace's grants use (a shard
// replica's member). Call it before the next process opens st. A group
// below 0 means the harness does not know it: the group last applied.
func (r *recorder) restarted(node string, group int, st *raftadapter.Stores) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.perNode, node)
	last, ok := r.lastApplied[node]
	if group < 0 {
		group = last.Group
	}
	if !ok {
		r.lastApplied[node] = checker.Restart{Group: group} // the node's first process
		return
	}
	last.Node, _, _ = strings.Cut(node, "/")
	last.Group = group
	last.At = r.now()
	tail := storedTail{base: last.Applied}
	if st != nil {
		tail = readStoredTail(*st, last.Applied)
		last.Stored = tail.last
	}
	r.restarts = append(r.restarts, last)
	r.tails = append(r.tails, tail)
	r.lastApplied[node] = checker.Restart{Group: group}
}

// started records the incarnation of node's new process (the acquires it
// proposes carry it), once it runs.
func (r *recorder) started(node string, incarnation uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.lastApplied[node]
	last.Incarnation = incarnation
	r.lastApplied[node] = last
}

func (r *recorder) wake(group int, resource string, index uint64, lease lock.LeaseID, woken int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := wakeKey{group: group, index: index, resource: resource, lease: lease}
	if lease.IsZero() {
		r.wakeups[k] += woken
		return
	}
	// Attempts of one request waiting on several nodes (a retry went
	// elsewhere) are one request woken.
	r.wakeups[k] = 1
}

// Fault implements nemesis.Recorder.
func (r *recorder) Fault(name, target string, start, end time.Time) {
	r.mu.Lock()
	r.faults = append(r.faults, checker.Fault{
		Name: name, Target: target, Start: int64(start.Sub(r.start)), End: int64(end.Sub(r.start)),
	})
	r.mu.Unlock()
}

// panicked records a panic recovered inside a server: where is "apply"
// (group and index set) or "http".
func (r *recorder) panicked(node, where string, group int, index uint64, v any, stack []byte) {
	r.mu.Lock()
	r.panics = append(r.panics, checker.Panic{Node: node, Where: where, Group: group, Index: index,
		At: r.now(), Value: fmt.Sprint(v), Stack: string(stack)})
	r.mu.Unlock()
}

// history assembles the checker's view of the run.
func (r *recorder) history(seed int64, scenario string) *checker.History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := &checker.History{Seed: seed, Scenario: scenario, Ops: slices.Clone(r.ops), Faults: slices.Clone(r.faults),
		Replicas: r.replicas}
	h.Replicas.Mismatches = slices.Clone(r.replicas.Mismatches)
	h.Entries = slices.Clone(r.entries)
	h.Panics = slices.Clone(r.panics)
	h.Commands = slices.Clone(r.commands)
	h.Restarts = slices.Clone(r.restarts)
	for i, t := range r.tails {
		h.Restarts[i].Kept = t.kept(func(index uint64) (uint64, bool) {
			a, ok := r.applied[traceKey{group: h.Restarts[i].Group, index: index}]
			return a.entry, ok
		})
	}
	keys := make([]traceKey, 0, len(r.trace))
	for k := range r.trace {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b traceKey) int {
		if a.group != b.group {
			return a.group - b.group
		}
		if a.index != b.index {
			if a.index < b.index {
				return -1
			}
			return 1
		}
		return a.ordinal - b.ordinal
	})
	for _, k := range keys {
		h.Trace = append(h.Trace, r.trace[k])
	}
	wk := make([]wakeKey, 0, len(r.wakeups))
	for k := range r.wakeups {
		wk = append(wk, k)
	}
	slices.SortFunc(wk, func(a, b wakeKey) int {
		if a.group != b.group {
			return a.group - b.group
		}
		if a.index < b.index {
			return -1
		}
		if a.index > b.index {
			return 1
		}
		return 0
	})
	for _, k := range wk {
		h.Wakeups = append(h.Wakeups, checker.Wakeup{Resource: k.resource, Index: k.index, Waiters: r.wakeups[k]})
	}
	h.Writes, h.Grants = r.fenced.Records()
	return h
}

// never is the Return of an operation whose outcome is unknown.
const never = math.MaxInt64
