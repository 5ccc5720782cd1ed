package faultctl

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

// Record kinds of a trace file.
const (
	// KindStart opens every process lifetime: a restarted node applies
	// again from its snapshot, so its event numbering starts over.
	KindStart = "start"
	KindEvent = "event"
	KindApply = "apply"
	KindWake  = "wake"
)

// Record is one line of a trace file. At is the wall clock (Unix ns) when
// the process wrote it: every process of a test runs on one machine, so
// the harness can place records of all nodes on its own timeline.
type Record struct {
	Kind string `json:"k"`
	Node string `json:"n"`
	At   int64  `json:"at"`
	// Group is the lock shard (Raft group) whose replica on Node wrote an
	// event, apply or wake record: a sharded member runs several, whose
	// log indexes repeat.
	Group uint64 `json:"g,omitempty"`
	// Event fields (KindEvent); Index also for KindApply and KindWake.
	Index     uint64 `json:"i,omitempty"`
	LogTime   int64  `json:"lt,omitempty"`
	Event     string `json:"ev,omitempty"`
	Resource  string `json:"r,omitempty"`
	LeaseID   string `json:"l,omitempty"`
	Client    string `json:"c,omitempty"`
	Mode      string `json:"m,omitempty"`
	Token     uint64 `json:"t,omitempty"`
	ExpiresAt int64  `json:"x,omitempty"`
	// GraceMs is the lease's grace window (lock.Lease.GraceMs).
	GraceMs int64 `json:"gr,omitempty"`
	// Many and ManySize tie a multi request's events together
	// (lock.Event.Many, ManySize).
	Many     string `json:"mn,omitempty"`
	ManySize int    `json:"ms,omitempty"`
	// Apply fields: hashes of the entry bytes and of the state it left.
	EntryHash   uint64 `json:"eh,omitempty"`
	StateDigest uint64 `json:"sd,omitempty"`
	// Woken is the number of callers a KindWake woke.
	Woken int `json:"w,omitempty"`
}

// TraceWriter appends records to a file, one write per record and no
// buffer in the process, so a kill -9 loses nothing already applied.
type TraceWriter struct {
	node string
	mu   sync.Mutex
	f    *os.File
	err  error
}

// OpenTrace opens (appending) the trace file of node and writes KindStart.
func OpenTrace(path, node string) (*TraceWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	w := &TraceWriter{node: node, f: f}
	w.write(Record{Kind: KindStart})
	return w, w.Err()
}

// Err is the first write error, if any: the harness must not judge an
// incomplete trace, so the process logs it.
func (w *TraceWriter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *TraceWriter) write(r Record) {
	r.Node = w.node
	w.mu.Lock()
	defer w.mu.Unlock()
	// At is read under the lock so that one node's records are in time order.
	r.At = time.Now().UnixNano()
	b, err := json.Marshal(r)
	if err == nil {
		_, err = w.f.Write(append(b, '\n'))
	}
	if err != nil && w.err == nil {
		w.err = err
	}
}

// GroupTrace writes the records of one lock shard's replica: its hooks
// are node.Hooks.OnEvent, OnApply and OnWake.
type GroupTrace struct {
	w     *TraceWriter
	group uint64
}

// Group returns the hooks of lock shard g on this node.
func (w *TraceWriter) Group(g uint64) GroupTrace { return GroupTrace{w: w, group: g} }

// Event records one state-machine event. Freed events are bookkeeping for
// the herd wake-ups, not trace entries.
func (t GroupTrace) Event(ev lock.Event) {
	if ev.Kind == lock.EventFreed {
		return
	}
	rec := Record{Kind: KindEvent, Group: t.group, Index: ev.Index, LogTime: ev.LogTime, Event: ev.Kind.String(),
		Resource: ev.Resource, LeaseID: ev.Lease.ID.String(), Client: ev.Lease.ClientID,
		Mode: ev.Lease.Mode.String(), Token: ev.Lease.Token, ExpiresAt: ev.Lease.ExpiresAt, GraceMs: ev.Lease.GraceMs}
	if !ev.Many.IsZero() {
		rec.Many, rec.ManySize = ev.Many.String(), ev.ManySize
	}
	t.w.write(rec)
}

// Apply records one applied entry.
func (t GroupTrace) Apply(index uint64, entry []byte, st *lock.State) {
	h := fnv.New64a()
	_, _ = h.Write(entry)
	t.w.write(Record{Kind: KindApply, Group: t.group, Index: index, EntryHash: h.Sum64(), StateDigest: st.Digest(),
		LogTime: st.Metrics().LogTime})
}

// Wake records one wake-up of blocked callers.
func (t GroupTrace) Wake(resource string, index uint64, lease lock.LeaseID, woken int) {
	r := Record{Kind: KindWake, Group: t.group, Resource: resource, Index: index, Woken: woken}
	if !lease.IsZero() {
		r.LeaseID = lease.String()
	}
	t.w.write(r)
}

// Close closes the file.
func (w *TraceWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}

// maxRecordBytes bounds one line of a trace file.
const maxRecordBytes = 1 << 16

// ReadTrace decodes a trace file. A torn last line (the process was killed
// mid-write) is dropped; any other bad line is an error.
func ReadTrace(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxRecordBytes)
	var out []Record
	var pending error
	for line := 1; sc.Scan(); line++ {
		if pending != nil {
			return nil, pending
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			pending = fmt.Errorf("trace line %d: %w", line, err)
			continue
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}
