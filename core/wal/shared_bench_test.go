package wal_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstep/lockstep/core/wal"
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
	stores := make([]raft.LogStore, groups)
	var sh *wal.Shared
	if shared {
		sh = openShared(b, filepath.Join(dir, "shared"), wal.SharedOptions{})
	}
	for g := range stores {
		if shared {
			stores[g] = openGroup(b, sh, uint64(g+1))
		} else {
			stores[g] = openStore(b, filepath.Join(dir, fmt.Sprint(g)), wal.Options{})
		}
	}
	var next, busyNs atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			batch := make([]*raft.Log, 16)
			for i := range batch {
				batch[i] = &raft.Log{Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{'x'}, 100), AppendedAt: time.Now()}
			}
			index := uint64(1)
			for next.Add(1) <= int64(b.N) {
				for _, l := range batch {
					l.Index = index
					index++
				}
				start := time.Now()
				if err := s.StoreLogs(batch); err != nil {
					b.Error(err)
					return
				}
				busyNs.Add(int64(time.Since(start)))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	secs := b.Elapsed().Seconds()
	syncs := float64(b.N)
	if shared {
		syncs = float64(sh.Stats().Flushes)
	}
	b.ReportMetric(float64(b.N)/secs, "storelogs/s")
	b.ReportMetric(syncs/secs, "fdatasync/s")
	b.ReportMetric(float64(busyNs.Load())/float64(b.N)/1e3, "µs/storelogs")
}
