package wal_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/lockstep/lockstep/core/wal"
	"go.etcd.io/bbolt"
)

// BenchmarkStoreLogs16 measures one durable StoreLogs of a 16-entry batch
// (100-byte commands, sync on) for this store and for raft-boltdb configured
// as core/node configures it; µs/op is reported for the comparison.
func BenchmarkStoreLogs16(b *testing.B) {
	cases := []struct {
		name string
		open func(b *testing.B, dir string) raft.LogStore
	}{
		{"wal", func(b *testing.B, dir string) raft.LogStore {
			return openStore(b, dir, wal.Options{})
		}},
		{"boltdb", func(b *testing.B, dir string) raft.LogStore {
			s, err := raftboltdb.New(raftboltdb.Options{
				Path:        filepath.Join(dir, "raft.db"),
				BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true},
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			store := tc.open(b, b.TempDir())
			batch := make([]*raft.Log, 16)
			for i := range batch {
				batch[i] = &raft.Log{Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{'x'}, 100), AppendedAt: time.Now()}
			}
			next := uint64(1)
			for b.Loop() {
				for _, l := range batch {
					l.Index = next
					next++
				}
				if err := store.StoreLogs(batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
		})
	}
}
