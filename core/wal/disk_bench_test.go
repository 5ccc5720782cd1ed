package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkDiskFdatasync measures this disk's limit, the floor under every
// commit: append 4 KiB and fdatasync, in a loop, from 1, 3 and 9 writers
// at once, each on its own file (as 1 group, 3 replicas of one group, and
// 3 replicas x 3 shards of `lockd dev` would). It reports fdatasyncs/s over
// all writers and the mean time one fdatasync takes. Run with -benchtime
// 3s (or a count, 2000x) for stable figures.
func BenchmarkDiskFdatasync(b *testing.B) {
	for _, writers := range []int{1, 3, 9} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			benchmarkFdatasync(b, writers)
		})
	}
}

func benchmarkFdatasync(b *testing.B, writers int) {
	dir := b.TempDir()
	files := make([]*os.File, writers)
	for i := range files {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("w%d", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		files[i] = f
	}
	page := make([]byte, 4096)
	var next, busyNs atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, f := range files {
		wg.Add(1)
		go func(f *os.File) {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := f.Write(page); err != nil {
					b.Error(err)
					return
				}
				start := time.Now()
				if err := syncData(f); err != nil {
					b.Error(err)
					return
				}
				busyNs.Add(int64(time.Since(start)))
			}
		}(f)
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fdatasync/s")
	b.ReportMetric(float64(busyNs.Load())/float64(b.N)/1e3, "us/fdatasync")
}
