package lock

import (
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// benchClients are the client ids the benchmarks spread leases over.
var benchClients = func() []string {
	ids := make([]string, 16)
	for i := range ids {
		ids[i] = fmt.Sprintf("client-%02d", i)
	}
	return ids
}()

func benchLeaseID(i uint64) LeaseID {
	var id LeaseID
	id[0] = 0xB0
	for j := 0; j < 8; j++ {
		id[8+j] = byte(i >> (8 * j))
	}
	return id
}

// BenchmarkApplyAcquireRelease measures one uncontended acquire plus its
// release (two log entries), the common path of every lock.
func BenchmarkApplyAcquireRelease(b *testing.B) { benchAcquireRelease(b, Quota{}) }

// BenchmarkApplyAcquireReleaseQuota is the same with a quota on every
// acquire: the cost of counting usage and checking it.
func BenchmarkApplyAcquireReleaseQuota(b *testing.B) {
	benchAcquireRelease(b, Quota{Held: 1000, Queued: 100, ClientHeld: 10, ClientQueued: 10})
}

func benchAcquireRelease(b *testing.B, q Quota) {
	s := mustNew(b, DefaultConfig())
	acquire := Command{Op: OpAcquire, Resource: "orders:42", ClientID: benchClients[0], Mode: Exclusive, TTLMs: 30_000, Quota: q}
	release := Command{Op: OpRelease, Resource: acquire.Resource}
	var index uint64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := benchLeaseID(uint64(i) + 1)
		acquire.LeaseID, release.LeaseID = id, id
		index++
		acquire.Mono = int64(index) * int64(time.Microsecond)
		if res, _ := s.Apply(Entry{Index: index, Term: 1, Command: acquire}); !res.Granted {
			b.Fatalf("acquire %d not granted: %+v", i, res)
		}
		index++
		release.Mono = int64(index) * int64(time.Microsecond)
		if res, _ := s.Apply(Entry{Index: index, Term: 1, Command: release}); res.Code != OK {
			b.Fatalf("release %d: %v", i, res.Code)
		}
	}
}

// fillLeases applies n exclusive acquires on distinct resources spread over
// the 16 bench clients, without request ids, all far from expiry.
func fillLeases(tb fataler, s *State, n int) {
	cmd := Command{Op: OpAcquire, Mode: Exclusive, TTLMs: s.Config().MaxTTL.Milliseconds()}
	for i := 0; i < n; i++ {
		cmd.Resource = fmt.Sprintf("res-%07d", i)
		cmd.ClientID = benchClients[i%len(benchClients)]
		cmd.LeaseID = benchLeaseID(uint64(i) + 1)
		cmd.Mono = int64(i) * int64(time.Microsecond)
		if res, _ := s.Apply(Entry{Index: uint64(i) + 1, Term: 1, Command: cmd}); !res.Granted {
			tb.Fatalf("lease %d not granted: %+v", i, res)
		}
	}
}

// BenchmarkSnapshot measures encoding a state of 100,000 leases.
func BenchmarkSnapshot(b *testing.B) {
	s := mustNew(b, DefaultConfig())
	fillLeases(b, s, 100_000)
	b.SetBytes(int64(len(s.Snapshot())))
	b.ReportAllocs()
	for b.Loop() {
		s.Snapshot()
	}
}

// BenchmarkRestore measures decoding a snapshot of 100,000 leases.
func BenchmarkRestore(b *testing.B) {
	s := mustNew(b, DefaultConfig())
	fillLeases(b, s, 100_000)
	snap := s.Snapshot()
	b.SetBytes(int64(len(snap)))
	b.ReportAllocs()
	for b.Loop() {
		if err := mustNew(b, DefaultConfig()).Restore(snap); err != nil {
			b.Fatal(err)
		}
	}
}

// heapAlloc returns live heap bytes after a full collection.
func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkHeapPerLease builds 1,000,000 active leases on distinct resources
// and reports the live heap they add per lease (B/lease), measured as heap
// in use after GC before and after. The resource names are made inside the
// measurement because the state keeps them. One iteration takes seconds:
// run with -benchtime=1x.
func BenchmarkHeapPerLease(b *testing.B) {
	const leases = 1_000_000
	b.Logf("sizes: resource %d B, holder %d B, waiter %d B, resourceExtra %d B",
		unsafe.Sizeof(resource{}), unsafe.Sizeof(holder{}), unsafe.Sizeof(waiter{}), unsafe.Sizeof(resourceExtra{}))
	var perLease float64
	for b.Loop() {
		before := heapAlloc()
		s := mustNew(b, DefaultConfig())
		fillLeases(b, s, leases)
		after := heapAlloc()
		runtime.KeepAlive(s)
		perLease = float64(after-before) / leases
	}
	b.ReportMetric(perLease, "B/lease")
}

// BenchmarkFreezeAndCopyBack measures a freeze of 1,000,000 leases and the
// copying it defers: "freeze-ms" is what Freeze costs (the FSM holds the
// apply goroutine for it), "copy-us/chunk" what the first later write to
// each 256-record chunk pays, "copy-all-ms" all of them (an upper bound per
// snapshot, spread over the applies that touch each chunk first).
func BenchmarkFreezeAndCopyBack(b *testing.B) {
	s := mustNew(b, DefaultConfig())
	fillLeases(b, s, 1_000_000)
	a := s.resources.arena
	var freeze, copyAll time.Duration
	for b.Loop() {
		start := time.Now()
		f := s.Freeze()
		freeze += time.Since(start)
		start = time.Now()
		for c := range a.chunks {
			a.chunk(uint32(c))
		}
		copyAll += time.Since(start)
		runtime.KeepAlive(f)
	}
	n := float64(b.N)
	b.ReportMetric(float64(freeze.Microseconds())/1000/n, "freeze-ms")
	b.ReportMetric(float64(copyAll.Microseconds())/1000/n, "copy-all-ms")
	b.ReportMetric(float64(copyAll.Nanoseconds())/1000/n/float64(len(a.chunks)), "copy-us/chunk")
}
