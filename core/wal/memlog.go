package wal

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// memLog is the live log held in memory: entries[i] has index first+i. Both
// the write path and recovery mutate it only through checkAppend/append and
// planDelete/delete, so a replay of the file rebuilds exactly the state the
// writes produced.
type memLog struct {
	first   uint64
	entries []raft.Log
	// segs[i] is the segment file holding entries[i] (a shared log's
	// segment number; always 0 in a Store's single file).
	segs []uint32
	// liveBytes is the encoded size of the live entries; the file size minus
	// this is the dead space compaction reclaims.
	liveBytes int64
}

func (m *memLog) empty() bool { return len(m.entries) == 0 }

// firstIndex and lastIndex return 0 on an empty log, as raft expects.
func (m *memLog) firstIndex() uint64 {
	if m.empty() {
		return 0
	}
	return m.first
}

func (m *memLog) lastIndex() uint64 {
	if m.empty() {
		return 0
	}
	return m.first + uint64(len(m.entries)) - 1
}

// get returns the entry at index; ok is false outside the live range.
func (m *memLog) get(index uint64) (raft.Log, bool) {
	if m.empty() || index < m.first || index > m.lastIndex() {
		return raft.Log{}, false
	}
	return m.entries[index-m.first], true
}

// checkAppend validates a batch without changing anything: indexes must be
// consecutive and the batch must start inside the live range (overwriting
// its suffix, as bolt allows) or right after it. An empty log accepts any
// start, which is how the log resumes after a snapshot removed everything.
func (m *memLog) checkAppend(batch []raft.Log) error {
	if len(batch) == 0 {
		return nil
	}
	start := batch[0].Index
	if start == 0 {
		return fmt.Errorf("entry index 0: %w", ErrNotContiguous)
	}
	for i := 1; i < len(batch); i++ {
		if batch[i].Index != start+uint64(i) {
			return fmt.Errorf("batch index %d follows %d: %w", batch[i].Index, batch[i-1].Index, ErrNotContiguous)
		}
	}
	if m.empty() {
		return nil
	}
	if start < m.first || start > m.lastIndex()+1 {
		return fmt.Errorf("batch starts at %d, live log is [%d,%d]: %w", start, m.first, m.lastIndex(), ErrNotContiguous)
	}
	return nil
}

// append applies a batch that passed checkAppend, written to segment seg.
func (m *memLog) append(batch []raft.Log, seg uint32) {
	if len(batch) == 0 {
		return
	}
	if m.empty() {
		m.first = batch[0].Index
	} else if start := batch[0].Index; start <= m.lastIndex() {
		m.truncateFrom(start)
	}
	for i := range batch {
		m.liveBytes += int64(entryBytes(&batch[i]))
	}
	m.entries = append(m.entries, batch...)
	for range batch {
		m.segs = append(m.segs, seg)
	}
}

// oldestSeg is the segment holding the first live entry; ok is false on an
// empty log. Live entries were written in index order, so no live entry is
// in an older segment.
func (m *memLog) oldestSeg() (seg uint32, ok bool) {
	if m.empty() {
		return 0, false
	}
	return m.segs[0], true
}

// moveTo records that every live entry was rewritten into segment seg.
func (m *memLog) moveTo(seg uint32) {
	for i := range m.segs {
		m.segs[i] = seg
	}
}

// reset empties the log.
func (m *memLog) reset() {
	clear(m.entries)
	*m = memLog{}
}

// deletePlan is a DeleteRange normalised to the live range: it removes
// entries [dropLo, dropHi] which always form a prefix or a suffix.
type deletePlan struct {
	noop           bool
	dropLo, dropHi uint64
}

// planDelete normalises DeleteRange(lo, hi). Raft only drops a prefix (after
// a snapshot) or a suffix (a follower's conflicting entries); a hole in the
// middle would break contiguity and is rejected.
func (m *memLog) planDelete(lo, hi uint64) (deletePlan, error) {
	if lo > hi {
		return deletePlan{}, fmt.Errorf("delete range [%d,%d] is inverted: %w", lo, hi, ErrNotContiguous)
	}
	if m.empty() || hi < m.first || lo > m.lastIndex() {
		return deletePlan{noop: true}, nil
	}
	lo, hi = max(lo, m.first), min(hi, m.lastIndex())
	if lo > m.first && hi < m.lastIndex() {
		return deletePlan{}, fmt.Errorf("delete range [%d,%d] inside live log [%d,%d] would leave a hole: %w",
			lo, hi, m.first, m.lastIndex(), ErrNotContiguous)
	}
	return deletePlan{dropLo: lo, dropHi: hi}, nil
}

// delete applies a plan from planDelete.
func (m *memLog) delete(p deletePlan) {
	if p.noop {
		return
	}
	if p.dropLo > m.first {
		m.truncateFrom(p.dropLo)
		return
	}
	n := int(p.dropHi - m.first + 1)
	for i := range n {
		m.liveBytes -= int64(entryBytes(&m.entries[i]))
	}
	// Zero the dropped structs so their batch buffers can be collected
	// before append next reallocates the backing array.
	clear(m.entries[:n])
	m.entries = m.entries[n:]
	m.segs = m.segs[n:]
	m.first = p.dropHi + 1
	if m.empty() {
		m.entries, m.segs = nil, nil
	}
}

// truncateFrom drops every entry with index >= from (from is in range).
func (m *memLog) truncateFrom(from uint64) {
	k := int(from - m.first)
	for i := k; i < len(m.entries); i++ {
		m.liveBytes -= int64(entryBytes(&m.entries[i]))
	}
	clear(m.entries[k:])
	m.entries = m.entries[:k]
	m.segs = m.segs[:k]
	if m.empty() {
		m.entries, m.segs = nil, nil
	}
}

// verify re-checks the contiguity invariant after recovery.
func (m *memLog) verify() error {
	for i := range m.entries {
		if m.entries[i].Index != m.first+uint64(i) {
			return fmt.Errorf("entry %d has index %d, want %d: %w", i, m.entries[i].Index, m.first+uint64(i), ErrCorrupt)
		}
	}
	return nil
}
