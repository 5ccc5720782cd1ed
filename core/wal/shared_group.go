package wal

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

var (
	_ raft.LogStore          = (*Group)(nil)
	_ raft.StableStore       = (*Group)(nil)
	_ raft.MonotonicLogStore = (*Group)(nil)
	_ io.Closer              = (*Group)(nil)
)

// ErrGroupOpen is returned by Shared.Group for a group whose view is open.
var ErrGroupOpen = errors.New("wal: group already open")

// group is one Raft group's state in a Shared log. It outlives its views:
// recovery builds it, and reclaim may rewrite it while no view is open.
type group struct {
	id uint64
	// writeMu serialises the group's writes (its records must reach the
	// log in the order of the calls) and guards open and stable. The log
	// is read under writeMu alone, mutated under writeMu and mu.
	writeMu sync.Mutex
	open    bool
	stable  *stableStore

	// mu guards log for readers; it is never held across I/O.
	mu  sync.Mutex
	log memLog
}

// groupState returns group id's state, creating an empty one.
func (s *Shared) groupState(id uint64) *group {
	s.gmu.Lock()
	defer s.gmu.Unlock()
	g, ok := s.groups[id]
	if !ok {
		g = &group{id: id}
		s.groups[id] = g
	}
	return g
}

// Group is one Raft group's view of a Shared log: a raft.LogStore with
// exactly Store's semantics, and a raft.StableStore kept in its own file.
type Group struct {
	s      *Shared
	g      *group
	closed atomic.Bool
}

// Group opens group id's view. One view per group may be open at a time
// (ErrGroupOpen); closing it leaves the group's log in place for the next.
func (s *Shared) Group(id uint64) (*Group, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	g := s.groupState(id)
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	if g.open {
		return nil, fmt.Errorf("group %d: %w", id, ErrGroupOpen)
	}
	if g.stable == nil {
		st, err := openStable(filepath.Join(s.dir, fmt.Sprintf("group-%d.stable", id)), s.opts.NoSync)
		if err != nil {
			return nil, fmt.Errorf("wal: group %d stable store: %w", id, err)
		}
		g.stable = st
	}
	g.open = true
	return &Group{s: s, g: g}, nil
}

// Close ends this view; the shared log stays open.
func (v *Group) Close() error {
	if v.closed.Swap(true) {
		return nil
	}
	v.g.writeMu.Lock()
	v.g.open = false
	v.g.writeMu.Unlock()
	return nil
}

func (v *Group) usable() error {
	if v.closed.Load() || v.s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// IsMonotonic tells raft the log never has gaps (see Store.IsMonotonic).
func (v *Group) IsMonotonic() bool { return true }

// FirstIndex returns the first live index, 0 when the log is empty.
func (v *Group) FirstIndex() (uint64, error) {
	if err := v.usable(); err != nil {
		return 0, err
	}
	v.g.mu.Lock()
	defer v.g.mu.Unlock()
	return v.g.log.firstIndex(), nil
}

// LastIndex returns the last live index, 0 when the log is empty.
func (v *Group) LastIndex() (uint64, error) {
	if err := v.usable(); err != nil {
		return 0, err
	}
	v.g.mu.Lock()
	defer v.g.mu.Unlock()
	return v.g.log.lastIndex(), nil
}

// GetLog copies the entry at index into out, or returns
// raft.ErrLogNotFound; out's slices share the log's memory.
func (v *Group) GetLog(index uint64, out *raft.Log) error {
	if out == nil {
		return errors.New("wal: GetLog into nil log")
	}
	if err := v.usable(); err != nil {
		return err
	}
	v.g.mu.Lock()
	e, ok := v.g.log.get(index)
	v.g.mu.Unlock()
	if !ok {
		return raft.ErrLogNotFound
	}
	*out = e
	return nil
}

// StoreLog stores one entry; see StoreLogs.
func (v *Group) StoreLog(l *raft.Log) error {
	return v.StoreLogs([]*raft.Log{l})
}

// StoreLogs durably appends a batch with Store.StoreLogs' rules; it shares
// its write and fdatasync with the other groups' writes queued meanwhile,
// and returns once its own record is durable.
func (v *Group) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	batch, payload, err := encodeBatch(logs, 0, maxRecordBytes-groupFrameBytes)
	if err != nil {
		return err
	}

	g := v.g
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	if err := v.usable(); err != nil {
		return err
	}
	if err := g.log.checkAppend(batch); err != nil {
		return fmt.Errorf("wal: store logs: %w", err)
	}
	v.s.gate.RLock()
	defer v.s.gate.RUnlock()
	seg, err := v.s.commit(g.id, payload)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.log.append(batch, seg)
	g.mu.Unlock()
	return nil
}

// DeleteRange removes entries lo..hi inclusive with Store.DeleteRange's
// rules; the deletion is durable before it returns. Segments no group
// needs any more are deleted in the background.
func (v *Group) DeleteRange(lo, hi uint64) error {
	g := v.g
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	if err := v.usable(); err != nil {
		return err
	}
	plan, err := g.log.planDelete(lo, hi)
	if err != nil {
		return fmt.Errorf("wal: delete range: %w", err)
	}
	if plan.noop {
		return nil
	}
	payload := make([]byte, deletePayloadBytes)
	putDelete(payload, lo, hi)
	v.s.gate.RLock()
	defer v.s.gate.RUnlock()
	if _, err := v.s.commit(g.id, payload); err != nil {
		return err
	}
	g.mu.Lock()
	g.log.delete(plan)
	g.mu.Unlock()
	v.s.kickReclaim()
	return nil
}

// Set durably stores key = val in the group's stable store.
func (v *Group) Set(key, val []byte) error {
	if err := v.usable(); err != nil {
		return err
	}
	if err := v.g.stable.set(key, val); err != nil {
		return fmt.Errorf("wal: group %d: %w", v.g.id, err)
	}
	return nil
}

// Get returns a copy of key's value, or ErrKeyNotFound (unwrapped, as raft
// compares its text).
func (v *Group) Get(key []byte) ([]byte, error) {
	if err := v.usable(); err != nil {
		return nil, err
	}
	return v.g.stable.get(key)
}

// SetUint64 stores val as 8 big-endian bytes.
func (v *Group) SetUint64(key []byte, val uint64) error { return setUint64(v.Set, key, val) }

// GetUint64 returns key's value stored by SetUint64, or ErrKeyNotFound.
func (v *Group) GetUint64(key []byte) (uint64, error) { return getUint64(v.Get, key) }
