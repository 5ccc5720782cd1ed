package wal

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// Shared is one log that several Raft groups of a node write to, each
// through its own Group view. Concurrent writes of different groups share
// one write and one fdatasync (group commit): the first writer to find no
// flush under way flushes everything queued; writers arriving meanwhile
// queue and the next one in line flushes them all once the flush ends.
//
// On disk, the directory holds numbered segment files (seg-*.wal); the
// newest takes the appends. Each flush is one checksummed record whose
// payload is a list of (group, record) pairs, so a flush is atomic on
// recovery, whichever groups it carries. A segment is deleted once no group
// has a live entry in it or in any older segment; a group that pins an old
// segment while others move on has its few live entries rewritten into the
// newest segment (shared_reclaim.go). Raft's term and vote are kept per
// group in group-<id>.stable files: written only on elections, they do not
// need group commit, and keeping them out of the log keeps segment deletion
// free of state that must be carried forward.
type Shared struct {
	dir    string
	opts   SharedOptions
	logger *slog.Logger
	lock   *os.File

	// gate is read-held by every write from before it queues until its
	// group's memLog records where it landed; reclaim write-holds it to
	// read all groups' oldest segments consistently, and Close to wait for
	// writes to drain.
	gate sync.RWMutex

	// qmu guards the queue, the flushing flag and broken.
	qmu      sync.Mutex
	queue    []*pending
	flushing bool
	// broken is set once a write or sync fails: the file tail is then
	// unknown, so every later write fails until a reopen recovers it.
	broken error

	// The fields below belong to the one flusher at a time (flushing is
	// set) or to whoever holds gate exclusively.
	f    *os.File
	size int64
	segs []uint32 // segment numbers on disk, oldest first; the last is active
	buf  []byte

	active atomic.Uint32 // segs[len(segs)-1], readable without the gate
	dropMu sync.Mutex    // serialises dropSegments

	gmu    sync.Mutex // guards groups
	groups map[uint64]*group

	flushes, records atomic.Uint64

	closed atomic.Bool
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

// SharedOptions tunes a Shared log. The zero value is durable and
// production-ready.
type SharedOptions struct {
	// NoSync skips every fsync and fdatasync (tests and benchmarks only).
	NoSync bool
	// SegmentBytes is the size past which appends go to a new segment
	// file. Zero means 64 MiB.
	SegmentBytes int64
	// Logger receives recovery and reclaim events; nil means
	// slog.Default().
	Logger *slog.Logger
	// BeforeSync is Options.BeforeSync for the shared log: the fault seam
	// of test builds, nil in production.
	BeforeSync func() error
}

const defaultSegmentBytes = 64 << 20

// pending is one group's record waiting for a flush.
type pending struct {
	group   uint64
	payload []byte
	seg     uint32 // set by the flush that wrote it
	res     chan wake
}

// wake tells a queued writer its record is durable (or failed), or that it
// is now first in line and must flush.
type wake struct {
	lead bool
	err  error
}

// groupFrameBytes prefixes each record in a flush: group id, length.
const groupFrameBytes = 8 + 4

// OpenShared opens or creates the shared log in dir and replays every
// segment, rebuilding each group's log: a torn final flush is truncated
// away (and logged); any other damage is ErrCorrupt. Only one Shared may
// have dir open at a time (ErrLocked).
func OpenShared(dir string, opts SharedOptions) (*Shared, error) {
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = defaultSegmentBytes
	}
	logger := cmp.Or(opts.Logger, slog.Default())
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Shared{
		dir: dir, opts: opts, logger: logger, lock: lock,
		groups: map[uint64]*group{},
		kick:   make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if err := s.recover(); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("wal: open shared log %s: %w", dir, err)
	}
	go s.reclaimLoop()
	s.kickReclaim()
	return s, nil
}

// Close stops background reclaim, waits for writes under way and releases
// the files. Every later call on the log or its groups fails with
// ErrClosed.
func (s *Shared) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.stop)
	<-s.done
	s.gate.Lock()
	defer s.gate.Unlock()
	s.gmu.Lock()
	for _, g := range s.groups {
		g.writeMu.Lock()
		if g.stable != nil {
			g.stable.close()
		}
		g.writeMu.Unlock()
	}
	s.gmu.Unlock()
	if err := errors.Join(s.f.Close(), s.lock.Close()); err != nil {
		return fmt.Errorf("wal: close shared log: %w", err)
	}
	return nil
}

// commit queues payload as a record of group and returns once it is
// durable, with the segment it landed in. Callers hold gate for reading.
func (s *Shared) commit(groupID uint64, payload []byte) (uint32, error) {
	p := &pending{group: groupID, payload: payload, res: make(chan wake, 1)}
	s.qmu.Lock()
	if err := s.writableLocked(); err != nil {
		s.qmu.Unlock()
		return 0, err
	}
	s.queue = append(s.queue, p)
	if s.flushing {
		s.qmu.Unlock()
		if w := <-p.res; !w.lead {
			return p.seg, w.err
		}
		s.qmu.Lock()
	} else {
		s.flushing = true
	}
	// p is first in the queue. Writers just woken by the previous flush
	// are about to queue again: let them run before taking the batch.
	s.qmu.Unlock()
	runtime.Gosched()
	s.qmu.Lock()
	batch := s.takeBatch()
	s.qmu.Unlock()

	err := s.flush(batch)

	s.qmu.Lock()
	defer s.qmu.Unlock()
	if err != nil {
		s.broken = err
		err = fmt.Errorf("wal: append: %w", err)
	}
	for _, q := range batch[1:] {
		q.res <- wake{err: err}
	}
	switch {
	case err != nil:
		for _, q := range s.queue {
			q.res <- wake{err: err}
		}
		s.queue, s.flushing = nil, false
	case len(s.queue) > 0:
		s.queue[0].res <- wake{lead: true}
	default:
		s.flushing = false
	}
	return p.seg, err
}

// takeBatch removes the longest prefix of the queue that fits one record
// (at least one entry, which fits by the callers' checks). Callers hold
// qmu.
func (s *Shared) takeBatch() []*pending {
	n, total := 0, 0
	for n < len(s.queue) {
		b := groupFrameBytes + len(s.queue[n].payload)
		if n > 0 && total+b > maxRecordBytes {
			break
		}
		total += b
		n++
	}
	batch := s.queue[:n:n]
	s.queue = append([]*pending(nil), s.queue[n:]...)
	return batch
}

// writableLocked reports why the log cannot take writes. Callers hold qmu.
func (s *Shared) writableLocked() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.broken != nil {
		return fmt.Errorf("wal: log unusable after earlier failure: %w", s.broken)
	}
	return nil
}

// flush writes batch as one record with one write and one fdatasync,
// starting a new segment first when the active one is full. Only one flush
// runs at a time.
func (s *Shared) flush(batch []*pending) error {
	n := headerBytes
	for _, p := range batch {
		n += groupFrameBytes + len(p.payload)
	}
	if s.size > 0 && s.size+int64(n) > s.opts.SegmentBytes {
		if err := s.rotate(); err != nil {
			return err
		}
	}
	if cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	frame := s.buf[:n]
	off := headerBytes
	for _, p := range batch {
		off = putGroupRecord(frame, off, p.group, p.payload)
	}
	seal(frame)
	// Drop a huge buffer rather than keep it for every later flush.
	if n > 1<<20 {
		s.buf = nil
	}
	w, err := s.f.Write(frame)
	s.size += int64(w)
	if err == nil && s.opts.BeforeSync != nil {
		err = s.opts.BeforeSync()
	}
	if err == nil && !s.opts.NoSync {
		err = syncData(s.f)
	}
	if err != nil {
		return err
	}
	seg := s.active.Load()
	for _, p := range batch {
		p.seg = seg
	}
	s.flushes.Add(1)
	s.records.Add(uint64(len(batch)))
	return nil
}

// SharedStats counts a Shared log's work since it was opened.
type SharedStats struct {
	// Flushes is how many write+fdatasync rounds ran; Records how many
	// group records (StoreLogs, DeleteRange, rewrites) they carried.
	Flushes, Records uint64
	// Segments is how many segment files are on disk.
	Segments int
}

// Stats reports the log's counters.
func (s *Shared) Stats() SharedStats {
	s.gate.Lock()
	n := len(s.segs)
	s.gate.Unlock()
	return SharedStats{Flushes: s.flushes.Load(), Records: s.records.Load(), Segments: n}
}

// rotate starts the next segment.
func (s *Shared) rotate() error {
	next := s.active.Load() + 1
	f, err := s.createSegment(next)
	if err != nil {
		return err
	}
	if err := s.f.Close(); err != nil {
		s.logger.Warn("wal: close full segment", "err", err)
	}
	s.f, s.size = f, 0
	s.segs = append(s.segs, next)
	s.active.Store(next)
	s.kickReclaim()
	return nil
}

// kickReclaim wakes the reclaim goroutine without waiting for it.
func (s *Shared) kickReclaim() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}
