package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
)

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

func openSharedT(t *testing.T, dir string) *Shared {
	t.Helper()
	s, err := OpenShared(dir, SharedOptions{Logger: quietLogger})
	if err != nil {
		t.Fatalf("open shared: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func logsOf(group, from, to uint64) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: 1, Data: []byte(fmt.Sprintf("g%d-%d", group, i))})
	}
	return out
}

// lastIndexes reads every group's last index from a fresh open of dir.
func lastIndexes(t *testing.T, dir string, groups ...uint64) []uint64 {
	t.Helper()
	s := openSharedT(t, dir)
	defer s.Close()
	var out []uint64
	for _, id := range groups {
		g, err := s.Group(id)
		if err != nil {
			t.Fatal(err)
		}
		last, _ := g.LastIndex()
		out = append(out, last)
	}
	return out
}

// writeSplitFlush stores 1..5 in groups 1 and 2 (separate flushes), then
// writes one flush carrying 6..8 of group 1 and 6..7 of group 2, and
// returns the segment's size before it and the offset where group 2's
// record starts inside it.
func writeSplitFlush(t *testing.T, dir string) (before, secondRecord int64) {
	t.Helper()
	s := openSharedT(t, dir)
	g1, _ := s.Group(1)
	g2, _ := s.Group(2)
	if err := g1.StoreLogs(logsOf(1, 1, 5)); err != nil {
		t.Fatal(err)
	}
	if err := g2.StoreLogs(logsOf(2, 1, 5)); err != nil {
		t.Fatal(err)
	}
	before = s.size
	encode := func(logs []*raft.Log) []byte {
		batch := make([]raft.Log, len(logs))
		for i, l := range logs {
			batch[i] = *l
		}
		p := make([]byte, entriesPayloadBytes(batch))
		putEntries(p, batch)
		return p
	}
	first := &pending{group: 1, payload: encode(logsOf(1, 6, 8))}
	second := &pending{group: 2, payload: encode(logsOf(2, 6, 7))}
	// One flush, as if the two groups had queued together.
	if err := s.flush([]*pending{first, second}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return before, before + headerBytes + groupFrameBytes + int64(len(first.payload))
}

// TestSharedPartialFlush cuts the last flush, which carries records of two
// groups, at points where a crash mid-write could: inside group 2's
// record (group 1's is whole), at its start, inside the flush header, and
// with the last byte flipped. Recovery must drop the flush for both groups
// (it is one record), cut the file back and keep appending.
func TestSharedPartialFlush(t *testing.T) {
	cases := []struct {
		name   string
		damage func(raw []byte, before, second int64) []byte
	}{
		{"cut inside second group's record", func(raw []byte, _, second int64) []byte { return raw[:second+groupFrameBytes+3] }},
		{"cut where second group's record starts", func(raw []byte, _, second int64) []byte { return raw[:second] }},
		{"cut inside flush header", func(raw []byte, before, _ int64) []byte { return raw[:before+5] }},
		{"last byte flipped", func(raw []byte, _, _ int64) []byte { raw[len(raw)-1] ^= 1; return raw }},
		{"flush zeroed", func(raw []byte, before, _ int64) []byte { clear(raw[before:]); return raw }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			before, second := writeSplitFlush(t, dir)
			if got := lastIndexes(t, dir, 1, 2); got[0] != 8 || got[1] != 7 {
				t.Fatalf("undamaged: last indexes %v, want [8 7]", got)
			}
			path := filepath.Join(dir, segmentName(1))
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.damage(raw, before, second), 0o600); err != nil {
				t.Fatal(err)
			}
			s := openSharedT(t, dir)
			if s.size != before {
				t.Fatalf("segment cut back to %d bytes, want %d", s.size, before)
			}
			for _, id := range []uint64{1, 2} {
				g, _ := s.Group(id)
				if last, _ := g.LastIndex(); last != 5 {
					t.Fatalf("group %d last index %d after a torn flush, want 5", id, last)
				}
				if err := g.StoreLogs(logsOf(id, 6, 6)); err != nil {
					t.Fatal(err)
				}
			}
			_ = s.Close()
			if got := lastIndexes(t, dir, 1, 2); got[0] != 6 || got[1] != 6 {
				t.Fatalf("after appending past the cut: last indexes %v, want [6 6]", got)
			}
		})
	}
}

// TestSharedCorruptFullSegment damages a segment that has a newer one
// after it: it was synced whole, so this is corruption, not a torn write.
func TestSharedCorruptFullSegment(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenShared(dir, SharedOptions{Logger: quietLogger, SegmentBytes: 256})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := s.Group(1)
	for i := uint64(1); i <= 20; i++ {
		if err := g.StoreLogs(logsOf(1, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, segmentName(1))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 1
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := OpenShared(dir, SharedOptions{Logger: quietLogger}); !errors.Is(err, ErrCorrupt) {
		if err == nil {
			_ = s.Close()
		}
		t.Fatalf("OpenShared = %v, want ErrCorrupt", err)
	}
}

// TestSharedAckAfterWrite has 6 groups store concurrently and, as soon as
// each StoreLogs returns, reads the segment back from disk: the record it
// acknowledged must be there, whether its own goroutine flushed it or
// another group's did.
func TestSharedAckAfterWrite(t *testing.T) {
	dir := t.TempDir()
	s := openSharedT(t, dir)
	path := filepath.Join(dir, segmentName(1))
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for id := uint64(1); id <= 6; id++ {
		g, _ := s.Group(id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(1); i <= 30; i++ {
				if err := g.StoreLogs(logsOf(id, i, i)); err != nil {
					errs <- err
					return
				}
				if last := lastOnDisk(path, id); last != i {
					errs <- fmt.Errorf("group %d: StoreLogs(%d) returned, the file holds up to %d", id, i, last)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Flushes >= st.Records {
		t.Fatalf("%d flushes for %d records: no group commit", st.Flushes, st.Records)
	}
}

// lastOnDisk replays the file at path and returns group id's last index.
func lastOnDisk(path string, id uint64) uint64 {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var m memLog
	_, _, _ = scanRecords(bytes.NewReader(raw), int64(len(raw)), func(p []byte) error {
		return forEachGroupRecord(p, func(g uint64, rec record) error {
			if g == id {
				return m.applyRecord(rec, 1, true)
			}
			return nil
		})
	})
	return m.lastIndex()
}

// TestSharedReplayAfterReclaim builds, with one flush per segment, a log
// where reclaim drops group 1's oldest segment while a later one still
// holds entries that a conflicting append below them replaced: replay then
// sees that append start before the group's first index, which must start
// the log afresh (the entries it kept below are gone with the segment).
func TestSharedReplayAfterReclaim(t *testing.T) {
	dir := t.TempDir()
	// One flush per segment; live logs are never small enough to rewrite.
	opts := SharedOptions{Logger: quietLogger, SegmentBytes: 1}
	s, err := OpenShared(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	g1, _ := s.Group(1)
	g2, _ := s.Group(2)
	steps := []func() error{
		func() error { return g1.StoreLogs(logsOf(1, 1, 4)) },  // seg 1
		func() error { return g2.StoreLogs(logsOf(2, 1, 2)) },  // seg 2, pins it
		func() error { return g1.StoreLogs(logsOf(1, 5, 10)) }, // seg 3
		func() error { return g1.StoreLogs(logsOf(3, 3, 12)) }, // seg 4: conflict from 3
		func() error { return g1.DeleteRange(0, 3) },           // seg 5: snapshot trim
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	s.dropSegments()
	if _, err := os.Stat(filepath.Join(dir, segmentName(1))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment 1 not reclaimed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, segmentName(3))); err != nil {
		t.Fatalf("segment 3 reclaimed too early: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenShared(dir, opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	g1, _ = s.Group(1)
	first, _ := g1.FirstIndex()
	last, _ := g1.LastIndex()
	var l raft.Log
	if err := g1.GetLog(4, &l); err != nil || string(l.Data) != "g3-4" || first != 4 || last != 12 {
		t.Fatalf("group 1 after reopen: [%d,%d], entry 4 = %q, %v; want [4,12] from the conflicting append", first, last, l.Data, err)
	}
}
