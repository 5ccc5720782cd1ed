package lock

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestExpiryAtScale: goal — with thousands of resources (index growth, arena
// id reuse, a deep heap) leases expire neither early nor late, exclusive ones
// in (expiry, token) order, and replicas with different hash seeds, one of
// them restored from a snapshot, emit identical events. Method: a seeded
// random log of acquires, releases and renews, then ticks through time,
// applied to three states and compared entry by entry.
func TestExpiryAtScale(t *testing.T) {
	const resources, commands, ticks = 2_000, 12_000, 300
	rng := rand.New(rand.NewPCG(7, 7))
	var log []Entry
	var ids []LeaseID
	var idRes []string
	mono := int64(0)
	add := func(cmd Command) {
		// Whole milliseconds, so many leases share an expiry and the token
		// tie-break decides.
		mono += rng.Int64N(3) * int64(time.Millisecond)
		cmd.Mono = mono
		log = append(log, Entry{Index: uint64(len(log) + 1), Term: 1, Command: cmd})
	}
	for len(log) < commands {
		switch k := rng.IntN(10); {
		case k < 6 || len(ids) == 0:
			id := benchLeaseID(uint64(len(ids)) + 1)
			name := fmt.Sprintf("r%d", rng.IntN(resources))
			mode := Exclusive
			if rng.IntN(3) == 0 {
				mode = Shared
			}
			ids, idRes = append(ids, id), append(idRes, name)
			add(Command{Op: OpAcquire, Resource: name, ClientID: benchClients[rng.IntN(4)], LeaseID: id,
				Mode: mode, TTLMs: 1 + rng.Int64N(5_000), WaitMs: rng.Int64N(2) * 3_000})
		case k < 8:
			j := rng.IntN(len(ids))
			add(Command{Op: OpRelease, Resource: idRes[j], LeaseID: ids[j]})
		default:
			j := rng.IntN(len(ids))
			add(Command{Op: OpRenew, Resource: idRes[j], LeaseID: ids[j], TTLMs: rng.Int64N(3_000)})
		}
	}
	cut := len(log)
	for range ticks {
		add(Command{Op: OpTick})
		mono += int64(30 * time.Millisecond)
	}

	cfg := DefaultConfig()
	live, replay := mustNew(t, cfg), mustNew(t, cfg)
	for _, e := range log[:cut] {
		a, _ := live.Apply(e)
		b, _ := replay.Apply(e)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("entry %d: results differ: %+v vs %+v", e.Index, a, b)
		}
	}
	restored := mustNew(t, cfg)
	if err := restored.Restore(live.Snapshot()); err != nil {
		t.Fatalf("restore: %v", err)
	}
	expired := 0
	prevTime := int64(-1)
	for _, e := range log[cut:] {
		_, events := live.Apply(e)
		events = copyEvents(events)
		for _, other := range []*State{replay, restored} {
			if _, got := other.Apply(e); !sameEvents(got, events) {
				t.Fatalf("entry %d: replicas disagree:\n %+v\n %+v", e.Index, got, events)
			}
		}
		var order [][2]int64
		for _, ev := range events {
			if ev.Kind != EventExpire {
				continue
			}
			expired++
			if ev.Lease.ExpiresAt > ev.LogTime || ev.Lease.ExpiresAt <= prevTime {
				t.Fatalf("entry %d: lease expiring at %d freed at %d (previous tick %d)",
					e.Index, ev.Lease.ExpiresAt, ev.LogTime, prevTime)
			}
			if ev.Lease.Mode == Exclusive {
				order = append(order, [2]int64{ev.Lease.ExpiresAt, int64(ev.Lease.Token)})
			}
		}
		if !slices.IsSortedFunc(order, func(a, b [2]int64) int { return slices.Compare(a[:], b[:]) }) {
			t.Fatalf("entry %d: exclusive leases expired out of (expiry, token) order: %v", e.Index, order)
		}
		prevTime = live.Metrics().LogTime
	}
	if m := live.Metrics(); expired < 1_000 || m.Leases != 0 || m.Resources != 0 {
		t.Fatalf("expired %d leases, %d leases and %d resources left; want >= 1000 expired and none left",
			expired, m.Leases, m.Resources)
	}
}

// TestRefusedAcquireReindexesPromotedGrant: goal — when an acquire that is
// refused first grants waiters (the expired head made way), the heap learns
// the resource's new earliest expiry (found by TestMatchesModel at 5000
// checks). Method: script the case with a second resource due between the
// old and new expiry, then read NextExpiry and tick past the grant's expiry.
func TestRefusedAcquireReindexesPromotedGrant(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	steps := []struct {
		atMs int64
		cmd  Command
	}{
		{0, acq("other", 'o', Exclusive, 70, 0)},
		{6, acq("r", 'c', Shared, 70, 0)},
		{6, acq("r", 'd', Exclusive, 1, 1)},  // queued, gives up at 7 ms
		{6, acq("r", 'f', Shared, 1, 70)},    // queued behind d
		{12, acq("r", 'e', Exclusive, 1, 0)}, // refused, but grants f until 13 ms
	}
	for i, st := range steps {
		st.cmd.Mono = st.atMs * int64(time.Millisecond)
		s.Apply(Entry{Index: uint64(i + 1), Term: 1, Command: st.cmd})
	}
	if at, ok := s.NextExpiry(); !ok || at != 13*int64(time.Millisecond) {
		t.Fatalf("next expiry %d (%v), want 13 ms", at, ok)
	}
	_, events := s.Apply(Entry{Index: 6, Term: 1, Command: Command{Op: OpTick, Mono: 18 * int64(time.Millisecond)}})
	if len(events) != 1 || events[0].Kind != EventExpire || events[0].Lease.ID != lid('f') {
		t.Fatalf("tick at 18 ms: events %+v, want f expiring", events)
	}
}
