package wal

import (
	"os"
	"path/filepath"
	"slices"
)

// reclaimLoop runs reclaim whenever a segment fills up or a group deletes
// entries, until Close.
func (s *Shared) reclaimLoop() {
	defer close(s.done)
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
			s.reclaim()
		}
	}
}

// reclaim frees the segments no group needs. Segments go oldest first:
// replay of the remaining ones must see every record that shaped a live
// entry, and a record can only shape entries written before it. A group
// whose oldest live entry is two or more segments behind the active one
// (an idle group, or one that has not snapshotted) would pin every segment
// from there on, so its live entries are first rewritten into the active
// segment, when they are small next to a segment (a large live log is
// left to raft's next snapshot to trim).
func (s *Shared) reclaim() {
	if len(s.groupsPinningBefore(s.active.Load())) == 0 {
		return
	}
	for _, g := range s.groupsPinningBefore(s.active.Load() - 1) {
		select {
		case <-s.stop:
			return
		default:
		}
		s.rewrite(g)
	}
	s.dropSegments()
}

// groupsPinningBefore lists the groups with a live entry in a segment
// older than seg.
func (s *Shared) groupsPinningBefore(seg uint32) []*group {
	s.gmu.Lock()
	all := make([]*group, 0, len(s.groups))
	for _, g := range s.groups {
		all = append(all, g)
	}
	s.gmu.Unlock()
	var out []*group
	for _, g := range all {
		g.mu.Lock()
		oldest, ok := g.log.oldestSeg()
		g.mu.Unlock()
		if ok && oldest < seg {
			out = append(out, g)
		}
	}
	return out
}

// rewrite appends g's live log as one reset record, which replay applies
// by replacing the group's log, so its older segments are no longer
// needed. The log's content does not change.
func (s *Shared) rewrite(g *group) {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	if g.log.empty() || g.log.liveBytes > s.opts.SegmentBytes/4 {
		return
	}
	batch := slices.Clone(g.log.entries)
	payload := make([]byte, entriesPayloadBytes(batch))
	putEntries(payload, batch)
	payload[0] = kindReset
	s.gate.RLock()
	defer s.gate.RUnlock()
	seg, err := s.commit(g.id, payload)
	if err != nil {
		s.logger.Warn("wal: rewrite of an idle group's entries failed", "group", g.id, "err", err)
		return
	}
	g.mu.Lock()
	g.log.reset()
	g.log.append(batch, seg)
	g.mu.Unlock()
}

// dropSegments deletes the segments older than every group's oldest live
// entry and than the active segment.
func (s *Shared) dropSegments() {
	// One at a time, so a caller returns once every file it found unneeded
	// is gone, even if another call took it off the list.
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	s.gate.Lock()
	if s.closed.Load() {
		s.gate.Unlock()
		return
	}
	limit := s.active.Load()
	s.gmu.Lock()
	for _, g := range s.groups {
		g.mu.Lock()
		if oldest, ok := g.log.oldestSeg(); ok {
			limit = min(limit, oldest)
		}
		g.mu.Unlock()
	}
	s.gmu.Unlock()
	n := 0
	for n < len(s.segs) && s.segs[n] < limit {
		n++
	}
	drop := slices.Clone(s.segs[:n])
	s.segs = s.segs[n:]
	s.gate.Unlock()

	// Oldest first and no directory sync: after a crash, recovery removes
	// whatever reappears before a gap (dropBeforeGap), and a reappearing
	// prefix replays to the same logs.
	for _, seg := range drop {
		if err := os.Remove(filepath.Join(s.dir, segmentName(seg))); err != nil {
			s.logger.Warn("wal: remove unneeded segment", "segment", seg, "err", err)
		}
	}
	if len(drop) > 0 {
		s.logger.Debug("wal: removed unneeded segments", "dir", s.dir, "count", len(drop), "below", limit)
	}
}
