// Package checker judges a recorded lockstep run: linearizability of the
// client-visible lock operations (Porcupine), then invariants over the
// committed state-machine trace and the fenced downstream store.
package checker

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockstep/lockstep/models"
)

// History is one recorded run. Times named Call/Return/At/Start/End are
// virtual ns; LogTime fields are the state machine's log time in ns.
type History struct {
	Seed     int64           `json:"seed"`
	Scenario string          `json:"scenario"`
	Ops      []Op            `json:"ops"`
	Writes   []Write         `json:"writes"`
	Grants   []GrantReturned `json:"grants"`
	Trace    []TraceEvent    `json:"trace"`
	Faults   []Fault         `json:"faults"`
	// Restarts say what each ended node process had applied.
	Restarts []Restart `json:"restarts,omitempty"`
	Wakeups  []Wakeup  `json:"wakeups"`
	Replicas Replicas  `json:"replicas"`
	// Entries lists every applied command entry of every group, as the
	// first replica to apply it saw it; the trace holds only entries that
	// changed something.
	Entries []Entry `json:"entries"`
	// Commands are the committed entries that say who holds callers
	// (see Command); empty when the harness cannot read entries.
	Commands []Command `json:"commands,omitempty"`
	// Panics are panics raised inside the servers and recovered by the
	// harness; each is a violation.
	Panics []Panic           `json:"panics,omitempty"`
	Notes  map[string]string `json:"notes,omitempty"`
}

// historyMeta is the part of a History saved in meta.json.
type historyMeta struct {
	Seed     int64             `json:"seed"`
	Scenario string            `json:"scenario"`
	Notes    map[string]string `json:"notes,omitempty"`
}

// Op is one client operation. ClientID is the Porcupine lane: a client that
// saw an indefinite outcome continues under a fresh id, because its unknown
// op never returns (Return = math.MaxInt64).
type Op struct {
	ClientID int               `json:"client_id"`
	Input    models.LockInput  `json:"input"`
	Output   models.LockOutput `json:"output"`
	Call     int64             `json:"call"`
	Return   int64             `json:"return"`
}

// Write is one attempted write to the fenced store. Seq orders writes and
// grant returns together.
type Write struct {
	Seq      uint64 `json:"seq"`
	At       int64  `json:"at"`
	Resource string `json:"resource"`
	LeaseID  string `json:"lease_id"`
	Client   string `json:"client"`
	Token    uint64 `json:"token"`
	Accepted bool   `json:"accepted"`
	// Claim marks the write a new holder makes as its grant returns.
	Claim bool `json:"claim,omitempty"`
}

// GrantReturned records a granted reply reaching its client.
type GrantReturned struct {
	Seq      uint64 `json:"seq"`
	At       int64  `json:"at"`
	Resource string `json:"resource"`
	LeaseID  string `json:"lease_id"`
	Token    uint64 `json:"token"`
}

// Trace event kinds: committed state-machine events.
const (
	KindEnqueue = "enqueue"
	KindGrant   = "grant"
	KindRelease = "release"
	KindExpire  = "expire"
	KindCancel  = "cancel"
	KindRenew   = "renew"
	// KindJoin: a retry joined a queued request; ExpiresAt is its new
	// deadline (on enqueue events ExpiresAt is the first deadline).
	KindJoin = "join"
	// KindFreed says a resource lost every holder with nobody queued (or a
	// semaphore a permit); the
	// checks ignore it (throughput-mode racers are woken by it).
	KindFreed = "freed"
	// KindGrace: a lease with a grace window outlived its TTL; it keeps
	// the resource until ExpiresAt+Grace unless revived or released.
	KindGrace = "grace"
	// KindRevive: a renew in the grace window revived the lease (a renew,
	// for every check but its kind).
	KindRevive = "revive"
)

// TraceEvent is one committed state-machine event, deduplicated across
// replicas by the recorder. Several events may share a log index.
type TraceEvent struct {
	// Group is the Raft group (shard) the event was committed in; indexes
	// and log times are per group.
	Group int    `json:"group,omitempty"`
	Index uint64 `json:"index"`
	// Slot is the place in its entry of the command that caused the event
	// (an entry may carry many commands).
	Slot      int    `json:"slot,omitempty"`
	LogTime   int64  `json:"log_time"`
	Kind      string `json:"kind"`
	Resource  string `json:"resource"`
	LeaseID   string `json:"lease_id,omitempty"`
	Client    string `json:"client,omitempty"`
	Mode      string `json:"mode,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	ExpiresAt int64  `json:"expires_at,omitempty"`
	// Grace is the lease's grace window (ns): it keeps the resource until
	// ExpiresAt+Grace (lock.Lease.GraceMs); 0 for none.
	Grace int64 `json:"grace,omitempty"`
	// Many, on the enqueue, join, cancel and grant events of a multi
	// request (acquire_many), is the request's lease id (lock.Event.Many)
	// and ManySize its number of resources; empty for single requests.
	Many     string `json:"many,omitempty"`
	ManySize int    `json:"many_size,omitempty"`
	// Hosts, on the grant of a queued request, are the node processes
	// whose attempts still waited for it (lock.Event.Hosts).
	Hosts []string `json:"hosts,omitempty"`
	// Permits, on a grant, is the N of the semaphore granted a permit
	// (lock.Event.Permits); 0 for a plain lock.
	Permits int `json:"permits,omitempty"`
	// Deadlock, on a cancel, says the cross-shard deadlock detector
	// removed the request to break a cycle (lock.Event.Deadlock).
	Deadlock bool `json:"deadlock,omitempty"`
}

// Fault is one injected fault window.
type Fault struct {
	Name   string `json:"name"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	Target string `json:"target,omitempty"`
}

// Wakeup says how many blocked callers an event at Index woke (the server
// reports one per event; several may share an index).
type Wakeup struct {
	Resource string `json:"resource"`
	Index    uint64 `json:"index"`
	Waiters  int    `json:"waiters"`
}

// Entry is one applied log entry: its log time and the virtual time the
// first replica applied it.
type Entry struct {
	Group   int    `json:"group,omitempty"`
	Index   uint64 `json:"index"`
	LogTime int64  `json:"log_time"`
	At      int64  `json:"at"`
}

// Replicas is what comparing the replicas of each group found: every
// replica's log entry and resulting state at each index it applied, held
// against the first replica that applied that index.
type Replicas struct {
	// Compared counts the (replica, index) pairs compared.
	Compared   int               `json:"compared"`
	Mismatches []ReplicaMismatch `json:"mismatches,omitempty"`
}

// ReplicaMismatch is one replica that left a log index differently from
// the first replica that applied it.
type ReplicaMismatch struct {
	Group int    `json:"group"`
	Index uint64 `json:"index"`
	Node  string `json:"node"`
	First string `json:"first"`
	// EntryDiffers: the entries themselves differ, so a committed entry was
	// replaced (lost state); otherwise one entry left different states
	// (the replicas diverged: nondeterminism or a snapshot that restores
	// something else than it saved).
	EntryDiffers bool `json:"entry_differs"`
}

// historyFiles maps each concern to its file.
func (h *History) historyFiles(meta *historyMeta) map[string]any {
	return map[string]any{
		"meta.json":     meta,
		"ops.json":      &h.Ops,
		"writes.json":   &h.Writes,
		"grants.json":   &h.Grants,
		"trace.json":    &h.Trace,
		"faults.json":   &h.Faults,
		"restarts.json": &h.Restarts,
		"wakeups.json":  &h.Wakeups,
		"replicas.json": &h.Replicas,
		"entries.json":  &h.Entries,
		"panics.json":   &h.Panics,
		"commands.json": &h.Commands,
	}
}

// Save writes the history to dir, one JSON file per concern, and returns the
// paths written.
func (h *History) Save(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("save history: %w", err)
	}
	meta := historyMeta{Seed: h.Seed, Scenario: h.Scenario, Notes: h.Notes}
	var paths []string
	for name, v := range h.historyFiles(&meta) {
		p := filepath.Join(dir, name)
		if err := WriteJSON(p, "  ", v); err != nil {
			return paths, fmt.Errorf("save history: %w", err)
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths, nil
}

// Load reads a history saved by Save. Missing concern files other than
// meta.json read as empty, so partial recorders stay loadable. A file may
// be gzipped in place (NAME.gz), as runs kept under results/ are: read as
// missing, it would judge an empty history and pass.
func Load(dir string) (*History, error) {
	h := &History{}
	var meta historyMeta
	for name, v := range h.historyFiles(&meta) {
		b, err := readMaybeGzipped(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) && name != "meta.json" {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("load history: %w", err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			return nil, fmt.Errorf("load history %s: %w", name, err)
		}
	}
	h.Seed, h.Scenario, h.Notes = meta.Seed, meta.Scenario, meta.Notes
	return h, nil
}

// readMaybeGzipped reads path, or path.gz when only that exists.
func readMaybeGzipped(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	f, gzErr := os.Open(path + ".gz")
	if errors.Is(gzErr, fs.ErrNotExist) {
		return nil, err
	}
	if gzErr != nil {
		return nil, gzErr
	}
	defer f.Close()
	zr, gzErr := gzip.NewReader(f)
	if gzErr != nil {
		return nil, fmt.Errorf("%s.gz: %w", filepath.Base(path), gzErr)
	}
	b, gzErr = io.ReadAll(zr)
	if gzErr != nil {
		return nil, fmt.Errorf("%s.gz: %w", filepath.Base(path), gzErr)
	}
	return b, nil
}

// WriteJSON writes v to path as JSON indented by indent a level, leaving
// <, > and & readable (messages quote operations like "acquire(...) ->
// ..."). Run reports use it too (maelstrom/runner).
func WriteJSON(path, indent string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}
