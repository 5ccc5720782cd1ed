package wal_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstep/lockstep/core/wal"
)

// logStore is what raft needs of a node's stores; both a Store and a
// Group of a Shared log provide it.
type logStore interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// backend opens one kind of log store in dir; small makes it reclaim space
// early (a Store's compaction threshold, a Shared log's segment size) so
// tests exercise it. logBytes is what the log's files hold on disk.
type backend struct {
	name     string
	open     func(t testing.TB, dir string, small bool) logStore
	logBytes func(t testing.TB, dir string) int64
}

// backends runs a test against a Store and against one group of a Shared
// log that another group writes to as well.
var backends = []backend{
	{
		name: "store",
		open: func(t testing.TB, dir string, small bool) logStore {
			opts := wal.Options{}
			if small {
				opts.CompactMinDeadBytes = 16 << 10
			}
			return openStore(t, dir, opts)
		},
		logBytes: fileSize,
	},
	{name: "shared", open: openSharedGroup, logBytes: segmentBytes},
}

// testGroup is the group the shared backend hands out; neighbourGroup
// writes a batch next to it on every open, so its records share files
// (and flushes) with another group's.
const (
	testGroup      = 7
	neighbourGroup = 99
)

// sharedGroup is a Group whose Close also closes its Shared log, so that
// a reopen replays the log from disk.
type sharedGroup struct {
	*wal.Group
	sh *wal.Shared
}

func (g sharedGroup) Close() error {
	if err := g.Group.Close(); err != nil {
		return err
	}
	return g.sh.Close()
}

func openShared(t testing.TB, dir string, opts wal.SharedOptions) *wal.Shared {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	sh, err := wal.OpenShared(dir, opts)
	if err != nil {
		t.Fatalf("open shared %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = sh.Close() })
	return sh
}

func openGroup(t testing.TB, sh *wal.Shared, id uint64) *wal.Group {
	t.Helper()
	g, err := sh.Group(id)
	if err != nil {
		t.Fatalf("open group %d: %v", id, err)
	}
	return g
}

func openSharedGroup(t testing.TB, dir string, small bool) logStore {
	t.Helper()
	opts := wal.SharedOptions{}
	if small {
		opts.SegmentBytes = 64 << 10
	}
	sh := openShared(t, dir, opts)
	n := openGroup(t, sh, neighbourGroup)
	last, err := n.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	mustStore(t, n, entries(last+1, last+2, 1))
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	return sharedGroup{Group: openGroup(t, sh, testGroup), sh: sh}
}

// segmentBytes sums the sizes of a Shared log's segment files.
func segmentBytes(t testing.TB, dir string) int64 {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range names {
		if !strings.HasPrefix(e.Name(), "seg-") {
			continue
		}
		info, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}

func (b backend) reopen(t testing.TB, s logStore, dir string, small bool) logStore {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return b.open(t, dir, small)
}

// forBackends runs test once per backend, each in a fresh directory.
func forBackends(t *testing.T, test func(t *testing.T, b backend, dir string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b, t.TempDir()) })
	}
}
