package node

import (
	"fmt"
	"testing"

	"github.com/lockstep/lockstep/core/lock"
)

// BenchmarkWatchHistoryRecord measures what the watch history adds to the
// apply of one entry: copying its events (a release and the grant it
// caused) into a full ring and evicting the oldest; with watched, also
// waking the watches that wait (one channel close, however many).
// Compare with core/lock's BenchmarkApplyAcquireRelease (two entries).
func BenchmarkWatchHistoryRecord(b *testing.B) {
	for _, watched := range []bool{false, true} {
		b.Run(fmt.Sprintf("watched=%t", watched), func(b *testing.B) {
			h := newHistory(DefaultWatchHistory)
			events := []lock.Event{
				{Kind: lock.EventRelease, Resource: "orders/42", Lease: lock.Lease{ClientID: "a", Token: 1}},
				{Kind: lock.EventGrant, Resource: "orders/42", Lease: lock.Lease{ClientID: "b", Token: 2}, Queued: true},
			}
			var index uint64
			b.ReportAllocs()
			for b.Loop() {
				index++
				if watched {
					h.mu.Lock()
					h.changed = make(chan struct{})
					h.mu.Unlock()
				}
				h.record(index, events)
			}
		})
	}
}
