package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	segmentPrefix = "seg-"
	segmentSuffix = ".wal"
)

func segmentName(n uint32) string { return fmt.Sprintf("%s%010d%s", segmentPrefix, n, segmentSuffix) }

// putGroupRecord writes group's record payload at frame[off:] and returns
// the next offset.
func putGroupRecord(frame []byte, off int, group uint64, payload []byte) int {
	binary.LittleEndian.PutUint64(frame[off:], group)
	binary.LittleEndian.PutUint32(frame[off+8:], uint32(len(payload)))
	return off + groupFrameBytes + copy(frame[off+groupFrameBytes:], payload)
}

// forEachGroupRecord splits a flush's payload into its (group, record)
// pairs. The flush passed its checksum, so any malformation is ErrCorrupt.
func forEachGroupRecord(p []byte, fn func(group uint64, rec record) error) error {
	if len(p) == 0 {
		return fmt.Errorf("empty flush: %w", ErrCorrupt)
	}
	for off := 0; off < len(p); {
		if len(p)-off < groupFrameBytes {
			return fmt.Errorf("group record header truncated: %w", ErrCorrupt)
		}
		group := binary.LittleEndian.Uint64(p[off:])
		n := binary.LittleEndian.Uint32(p[off+8:])
		off += groupFrameBytes
		if uint64(n) > uint64(len(p)-off) {
			return fmt.Errorf("group %d record of %d bytes exceeds the %d left: %w", group, n, len(p)-off, ErrCorrupt)
		}
		rec, err := decodePayload(p[off : off+int(n)])
		if err != nil {
			return fmt.Errorf("group %d: %w", group, err)
		}
		if err := fn(group, rec); err != nil {
			return fmt.Errorf("group %d: %w", group, err)
		}
		off += int(n)
	}
	return nil
}

// listSegments returns the segment numbers in dir, oldest first, and
// removes leftover temporary files of interrupted stable-store writes.
func listSegments(dir string) ([]uint32, error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var segs []uint32
	for _, e := range names {
		name := e.Name()
		if strings.HasSuffix(name, tmpSuffix) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("remove stale %s: %w", name, err)
			}
			continue
		}
		num, ok := strings.CutPrefix(name, segmentPrefix)
		if num, ok2 := strings.CutSuffix(num, segmentSuffix); ok && ok2 {
			n, err := strconv.ParseUint(num, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("segment file %s: %w", name, err)
			}
			segs = append(segs, uint32(n))
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// recover replays every segment into the groups' logs and leaves the
// newest open for appends. It runs inside OpenShared, before s is shared.
// Only the newest segment may end torn: every older one was synced whole
// before the next was created.
func (s *Shared) recover() error {
	segs, err := listSegments(s.dir)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		f, err := s.createSegment(1)
		if err != nil {
			return err
		}
		s.f, s.segs = f, []uint32{1}
		s.active.Store(1)
		return nil
	}
	segs, err = s.dropBeforeGap(segs)
	if err != nil {
		return err
	}
	for i, seg := range segs {
		last := i == len(segs)-1
		f, err := s.replaySegment(seg, last)
		if err != nil {
			return err
		}
		if !last {
			_ = f.Close()
			continue
		}
		s.f = f
	}
	for id, g := range s.groups {
		if err := g.log.verify(); err != nil {
			return fmt.Errorf("group %d: %w", id, err)
		}
	}
	s.segs = segs
	s.active.Store(segs[len(segs)-1])
	return nil
}

// replaySegment applies one segment's flushes and returns the file open
// and positioned at its end, a torn tail cut off when last.
func (s *Shared) replaySegment(seg uint32, last bool) (*os.File, error) {
	path := filepath.Join(s.dir, segmentName(seg))
	f, err := os.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	fail := func(err error) (*os.File, error) {
		_ = f.Close()
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		return fail(fmt.Errorf("stat %s: %w", path, err))
	}
	size := info.Size()
	valid, tornWhy, err := scanRecords(f, size, func(p []byte) error {
		return forEachGroupRecord(p, func(id uint64, rec record) error {
			return s.groupState(id).log.applyRecord(rec, seg, true)
		})
	})
	if err != nil {
		return fail(fmt.Errorf("%s: %w", path, err))
	}
	if valid < size {
		if !last {
			return fail(fmt.Errorf("%s: %s at offset %d of a full segment: %w", path, tornWhy, valid, ErrCorrupt))
		}
		s.logger.Warn("wal: truncating torn tail of shared log",
			"path", path, "offset", valid, "dropped_bytes", size-valid, "reason", tornWhy)
		if err := f.Truncate(valid); err != nil {
			return fail(fmt.Errorf("truncate torn tail of %s: %w", path, err))
		}
		if !s.opts.NoSync {
			if err := f.Sync(); err != nil {
				return fail(fmt.Errorf("sync truncated %s: %w", path, err))
			}
		}
	}
	if _, err := f.Seek(valid, io.SeekStart); err != nil {
		return fail(fmt.Errorf("seek %s: %w", path, err))
	}
	s.size = valid
	return f, nil
}

// dropBeforeGap keeps the run of consecutive segments ending at the newest
// and removes the older ones. Reclaim only ever removes a prefix of the
// segments, so a gap means a crash reordered its unsynced removals: every
// segment before the gap was being removed, and replaying it without the
// missing ones would resurrect deleted entries.
func (s *Shared) dropBeforeGap(segs []uint32) ([]uint32, error) {
	start := len(segs) - 1
	for start > 0 && segs[start-1] == segs[start]-1 {
		start--
	}
	for _, seg := range segs[:start] {
		path := filepath.Join(s.dir, segmentName(seg))
		s.logger.Warn("wal: removing a segment left behind by an interrupted reclaim", "path", path)
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove %s: %w", path, err)
		}
	}
	return segs[start:], nil
}

// createSegment creates segment n, its name durable before it returns.
func (s *Shared) createSegment(n uint32) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(s.dir, segmentName(n)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	if !s.opts.NoSync {
		if err := syncDir(s.dir); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}
