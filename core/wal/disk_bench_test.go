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
	busy := runWorkers(b, writers, func(w int) func() (time.Duration, error) {
		f := files[w]
		return func() (time.Duration, error) {
			if _, err := f.Write(page); err != nil {
				return 0, err
			}
			start := time.Now()
			err := syncData(f)
			return time.Since(start), err
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fdatasync/s")
	b.ReportMetric(float64(busy)/float64(b.N)/1e3, "us/fdatasync")
}

// runWorkers runs b.N operations spread over workers goroutines, each
// calling the op its newOp(worker) returns until the count is used up,
// and returns the total of the durations the ops report. The benchmark
// timer covers only the loop.
func runWorkers(b *testing.B, workers int, newOp func(worker int) func() (time.Duration, error)) time.Duration {
	ops := make([]func() (time.Duration, error), workers)
	for w := range ops {
		ops[w] = newOp(w)
	}
	var next, busyNs atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				d, err := op()
				if err != nil {
					b.Error(err)
					return
				}
				busyNs.Add(int64(d))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	return time.Duration(busyNs.Load())
}
