package wal

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkStoreLogsGroups has 1, 4 and 8 groups each call StoreLogs with
// 16-entry batches (100-byte commands, sync on) in a loop at once, as
// the leaders of that many Raft groups on one node would: per-group gives
// every group its own Store (own file, own fdatasync), shared puts them
// all on one Shared log. It reports StoreLogs/s over all groups, the mean
// µs one StoreLogs takes, and fdatasyncs/s (shared: flushes/s).
func BenchmarkStoreLogsGroups(b *testing.B) {
	for _, groups := range []int{1, 4, 8} {
		for _, mode := range []string{"per-group", "shared"} {
			b.Run(fmt.Sprintf("groups=%d/%s", groups, mode), func(b *testing.B) {
				benchmarkGroups(b, groups, mode == "shared")
			})
		}
	}
}

func benchmarkGroups(b *testing.B, groups int, shared bool) {
	dir := b.TempDir()
	quiet := quietLogger
	stores := make([]raft.LogStore, groups)
	var sh *Shared
	if shared {
		var err error
		if sh, err = OpenShared(filepath.Join(dir, "shared"), SharedOptions{Logger: quiet}); err != nil {
			b.Fatal(err)
		}
		defer sh.Close()
	}
	for g := range stores {
		var err error
		if shared {
			stores[g], err = sh.Group(uint64(g + 1))
		} else {
			var s *Store
			s, err = Open(filepath.Join(dir, fmt.Sprint(g)), Options{Logger: quiet})
			if err == nil {
				defer s.Close()
			}
			stores[g] = s
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	busy := runWorkers(b, groups, func(g int) func() (time.Duration, error) {
		batch := make([]*raft.Log, 16)
		for i := range batch {
			batch[i] = &raft.Log{Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{'x'}, 100), AppendedAt: time.Now()}
		}
		index := uint64(1)
		return func() (time.Duration, error) {
			for _, l := range batch {
				l.Index = index
				index++
			}
			start := time.Now()
			err := stores[g].StoreLogs(batch)
			return time.Since(start), err
		}
	})
	secs := b.Elapsed().Seconds()
	syncs := float64(b.N)
	if shared {
		syncs = float64(sh.Stats().Flushes)
	}
	b.ReportMetric(float64(b.N)/secs, "storelogs/s")
	b.ReportMetric(syncs/secs, "fdatasync/s")
	b.ReportMetric(float64(busy)/float64(b.N)/1e3, "µs/storelogs")
}
