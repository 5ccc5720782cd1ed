package node

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/codec"
	"github.com/lockstep/lockstep/core/lock"
)

// fillFSM applies n exclusive acquires on distinct resources through the
// FSM, in batches of 512 as raft hands them over.
func fillFSM(tb testing.TB, f *fsm, n int) {
	tb.Helper()
	cmd := lock.Command{Op: lock.OpAcquire, ClientID: "bench", Mode: lock.Exclusive, TTLMs: lock.DefaultConfig().MaxTTL.Milliseconds()}
	batch := make([]*raft.Log, 0, 512)
	for i := 0; i < n; i++ {
		cmd.Resource = fmt.Sprintf("res-%07d", i)
		cmd.LeaseID = lock.LeaseID{0xB0, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}
		cmd.Mono = int64(i) * int64(time.Microsecond)
		batch = append(batch, &raft.Log{Index: uint64(i) + 1, Term: 1, Type: raft.LogCommand, Data: codec.AppendCommand(nil, &cmd)})
		if len(batch) == cap(batch) || i == n-1 {
			for _, r := range f.ApplyBatch(batch) {
				if ap := r.([]applied)[0]; ap.err != nil || !ap.res.Granted {
					tb.Fatalf("acquire %d: %+v", i, ap)
				}
			}
			batch = batch[:0]
		}
	}
}

// discardSink is a raft.SnapshotSink that counts and drops what it gets.
type discardSink struct{ n int }

func (s *discardSink) Write(p []byte) (int, error) { s.n += len(p); return len(p), nil }
func (s *discardSink) Close() error                { return nil }
func (s *discardSink) Cancel() error               { return nil }
func (s *discardSink) ID() string                  { return "discard" }

var _ io.Writer = (*discardSink)(nil)

// renewBatch is 512 renews of leases spread evenly over n resources (one
// per 256-record chunk and more when n is large), the worst case for the
// first applies after a freeze: each touches a chunk the freeze shares.
func renewBatch(n int, first uint64) []*raft.Log {
	batch := make([]*raft.Log, 512)
	for j := range batch {
		i := j * (n / len(batch))
		cmd := lock.Command{Op: lock.OpRenew, Resource: fmt.Sprintf("res-%07d", i), TTLMs: 60_000,
			LeaseID: lock.LeaseID{0xB0, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}, Mono: int64(n) * int64(time.Microsecond)}
		batch[j] = &raft.Log{Index: first + uint64(j), Term: 1, Type: raft.LogCommand, Data: codec.AppendCommand(nil, &cmd)}
	}
	return batch
}

// BenchmarkFSMSnapshot measures what a snapshot costs the apply goroutine:
// "hold" is the time FSM.Snapshot runs (raft's FSM goroutine, with the FSM
// lock held, is stopped for it); "persist" is the time Persist takes on
// raft's snapshot goroutine, off the apply path; "renew512" is the next
// batch of 512 renews spread over all the locks, which pays for whatever
// copying the snapshot deferred.
func BenchmarkFSMSnapshot(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		for _, snapshots := range []bool{false, true} {
			b.Run(fmt.Sprintf("leases=%d/snapshot=%v", n, snapshots), func(b *testing.B) { benchSnapshot(b, n, snapshots) })
		}
	}
}

// benchSnapshot: without snapshots, each iteration only applies the renew
// batch (the baseline for renew512).
func benchSnapshot(b *testing.B, n int, snapshots bool) {
	f, err := newFSM(lock.DefaultConfig(), newNotifier(nil), nil, 0)
	if err != nil {
		b.Fatal(err)
	}
	fillFSM(b, f, n)
	var hold, persist, renew time.Duration
	sink := &discardSink{}
	next := uint64(n) + 1
	for b.Loop() {
		if snapshots {
			start := time.Now()
			snap, err := f.Snapshot()
			hold += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			start = time.Now()
			if err := snap.Persist(sink); err != nil {
				b.Fatal(err)
			}
			persist += time.Since(start)
			snap.Release()
		}
		batch := renewBatch(n, next)
		next += uint64(len(batch))
		start := time.Now()
		for _, r := range f.ApplyBatch(batch) {
			if ap := r.([]applied)[0]; ap.err != nil || ap.res.Code != lock.OK {
				b.Fatalf("renew: %+v", ap)
			}
		}
		renew += time.Since(start)
	}
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	if snapshots {
		b.ReportMetric(perOp(hold), "hold-ms/op")
		b.ReportMetric(perOp(persist), "persist-ms/op")
	}
	b.ReportMetric(perOp(renew), "renew512-ms/op")
}
