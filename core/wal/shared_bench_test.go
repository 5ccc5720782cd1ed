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
// all on one Shared log (two-shared: two Shared logs, half the groups on
// each, to see whether two flushes in flight beat one). It reports
// StoreLogs/s over all groups, the mean µs one StoreLogs takes, and
// fdatasyncs/s (shared: flushes/s).
func BenchmarkStoreLogsGroups(b *testing.B) {
	for _, groups := range []int{1, 4, 8} {
		for _, logs := range []int{0, 1, 2} {
			if logs > groups {
				continue
			}
			mode := map[int]string{0: "per-group", 1: "shared", 2: "two-shared"}[logs]
			b.Run(fmt.Sprintf("groups=%d/%s", groups, mode), func(b *testing.B) {
				benchmarkGroups(b, groups, logs)
			})
		}
	}
}

// benchmarkGroups runs groups writers on their own Stores (sharedLogs 0)
// or spread over sharedLogs Shared logs.
func benchmarkGroups(b *testing.B, groups, sharedLogs int) {
	dir := b.TempDir()
	quiet := quietLogger
	stores := make([]raft.LogStore, groups)
	shared := make([]*Shared, sharedLogs)
	for i := range shared {
		sh, err := OpenShared(filepath.Join(dir, fmt.Sprint("shared", i)), SharedOptions{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		defer sh.Close()
		shared[i] = sh
	}
	for g := range stores {
		var err error
		if sharedLogs > 0 {
			stores[g], err = shared[g%sharedLogs].Group(uint64(g + 1))
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
	if sharedLogs > 0 {
		syncs = 0
		for _, sh := range shared {
			syncs += float64(sh.Stats().Flushes)
		}
	}
	b.ReportMetric(float64(b.N)/secs, "storelogs/s")
	b.ReportMetric(syncs/secs, "fdatasync/s")
	b.ReportMetric(float64(busy)/float64(b.N)/1e3, "µs/storelogs")
}
