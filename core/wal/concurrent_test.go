package wal_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
)

// TestConcurrentGetLog runs readers calling GetLog on random live indexes
// while a writer appends batches and a trimmer deletes prefixes (forcing
// compactions); run under -race. Every read must return the canonical entry
// or, only for an index already trimmed, ErrLogNotFound. The final view
// must survive a reopen.
func TestConcurrentGetLog(t *testing.T) {
	forBackends(t, testConcurrentGetLog)
}

func testConcurrentGetLog(t *testing.T, b backend, dir string) {
	const (
		batches   = 300
		batchSize = 16
		keep      = 200
		readers   = 2
		readsMax  = 200_000 // per reader, bounds the loop if the writer stalls
	)
	s := b.open(t, dir, true)

	done := make(chan struct{})
	wrote := make(chan struct{}, 1)
	errs := make(chan error, readers+2)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // writer
		defer wg.Done()
		defer close(done)
		for b := range batches {
			from := uint64(b*batchSize + 1)
			if err := s.StoreLogs(bigEntries(from, from+batchSize-1, 1)); err != nil {
				errs <- fmt.Errorf("store: %w", err)
				return
			}
			select { // wake the trimmer without ever blocking on it
			case wrote <- struct{}{}:
			default:
			}
		}
	}()
	go func() { // trimmer, like raft compacting after snapshots
		defer wg.Done()
		for range batches {
			select {
			case <-done:
				return
			case <-wrote:
			}
			first, err := s.FirstIndex()
			if err != nil {
				errs <- err
				return
			}
			last, err := s.LastIndex()
			if err != nil {
				errs <- err
				return
			}
			if last > keep && last-keep >= first {
				if err := s.DeleteRange(0, last-keep); err != nil {
					errs <- fmt.Errorf("delete: %w", err)
					return
				}
			}
		}
	}()
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for range readsMax {
				select {
				case <-done:
					return
				default:
				}
				if err := readOne(s, rng); err != nil {
					errs <- err
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

	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if last != batches*batchSize {
		t.Fatalf("LastIndex = %d, want %d", last, batches*batchSize)
	}
	want := bigEntries(first, last, 1)
	checkView(t, s, want)
	// Without compaction the file would hold every batch ever written.
	written := int64(batches * batchSize * len(want[0].Data))
	if size := b.logBytes(t, dir); size > written/4 {
		t.Fatalf("log file is %d bytes after writing %d; compaction did not keep up", size, written)
	}
	s = b.reopen(t, s, dir, true)
	checkView(t, s, want)
}

func readOne(s raft.LogStore, rng *rand.Rand) error {
	first, err := s.FirstIndex()
	if err != nil {
		return err
	}
	last, err := s.LastIndex()
	if err != nil || last < first || first == 0 {
		return err
	}
	idx := first + rng.Uint64N(last-first+1)
	var got raft.Log
	err = s.GetLog(idx, &got)
	if errors.Is(err, raft.ErrLogNotFound) {
		// Only a trim can explain it, and trims only raise FirstIndex.
		if now, _ := s.FirstIndex(); now <= idx {
			return fmt.Errorf("GetLog(%d) not found but FirstIndex is %d", idx, now)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if want := bigEntries(idx, idx, 1)[0]; !sameLog(&got, want) {
		return fmt.Errorf("GetLog(%d) returned index %d data %q", idx, got.Index, got.Data[:20])
	}
	return nil
}
