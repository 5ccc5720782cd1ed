package lock

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestResourceTableMatchesMap: goal — the arena plus name index answer like
// a map through growth, in-place rebuilds (tombstone churn) and id reuse.
// Method: seeded random inserts and removes over several pool sizes, checking
// every lookup (also mid-resize) against a map and, at checkpoints,
// iteration and the id bound the slot packing relies on.
func TestResourceTableMatchesMap(t *testing.T) {
	cases := []struct {
		name  string
		pool  int // distinct names drawn from
		ops   int
		pctIn int  // chance in percent that an op inserts an absent name, else removes a present one
		drain bool // flip pctIn to 100-pctIn for the second half of the ops
	}{
		{"tiny churn", 3, 2_000, 50, false},
		{"grow to thousands", 5_000, 20_000, 90, false},
		{"churn at steady size", 600, 50_000, 50, false},
		{"grow then drain", 3_000, 30_000, 95, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			tab := newResourceTable()
			want := map[string]bool{}
			resizing := 0 // ops that found a resize under way
			for op := 0; op < tc.ops; op++ {
				if tab.index.old.live > 0 {
					resizing++
				}
				name := fmt.Sprintf("n%d", rng.IntN(tc.pool))
				pct := tc.pctIn
				if tc.drain && op >= tc.ops/2 {
					pct = 100 - pct
				}
				r := tab.find(name)
				if (r != nil) != want[name] {
					t.Fatalf("op %d: find(%q) = %v, map has it: %v", op, name, r != nil, want[name])
				}
				switch {
				case r == nil && rng.IntN(100) < pct:
					r = tab.insert(name)
					if r.name != name || r.id == 0 {
						t.Fatalf("op %d: insert(%q) gave %+v", op, name, r)
					}
					want[name] = true
				case r != nil && rng.IntN(100) >= pct:
					tab.remove(r)
					delete(want, name)
				}
				if op%997 == 0 || op == tc.ops-1 {
					checkTable(t, &tab, want)
				}
			}
			if tc.pool >= 100 && resizing == 0 {
				t.Errorf("no op ran during a resize; the incremental path went untested")
			}
		})
	}
}

// checkTable requires tab to hold exactly the names of want, each found by
// name, with every id below the index length.
func checkTable(t *testing.T, tab *resourceTable, want map[string]bool) {
	t.Helper()
	if tab.len() != len(want) {
		t.Fatalf("len %d, want %d", tab.len(), len(want))
	}
	seen := 0
	for r := range tab.all() {
		seen++
		if !want[r.name] {
			t.Fatalf("iteration yields %q, which was removed", r.name)
		}
		if tab.find(r.name) != r {
			t.Fatalf("find(%q) is not the iterated record", r.name)
		}
		if slotOf(r.id) >= uint32(len(tab.index.cur.slots)) {
			t.Fatalf("slot %d not below index length %d", slotOf(r.id), len(tab.index.cur.slots))
		}
	}
	if seen != len(want) {
		t.Fatalf("iteration yields %d records, want %d", seen, len(want))
	}
	if x := &tab.index.cur; x.used > len(x.slots)/8*7 {
		t.Fatalf("index load %d/%d over 7/8", x.used, len(x.slots))
	}
}

// TestClientModePacking: goal — a holder's client slot and mode survive
// packing at the edges of their ranges. Method: pack and unpack a table of
// pairs.
func TestClientModePacking(t *testing.T) {
	for _, tc := range []struct {
		slot uint32
		mode Mode
	}{
		{0, Exclusive}, {0, Shared}, {1<<clientSlotBits - 1, Shared}, {12345, Exclusive}, {7, 0}, {7, 3},
	} {
		c := makeClientMode(tc.slot, tc.mode)
		if c.slot() != tc.slot || c.mode() != tc.mode {
			t.Errorf("pack(%d, %d) unpacked to (%d, %d)", tc.slot, tc.mode, c.slot(), c.mode())
		}
	}
}

// TestStaleResourceIDPanics: goal — a reference kept past the free of its
// record (the arena reuses slots last in first out) panics on use instead of
// silently naming the lock that took the slot next. Method: free a record,
// let another name take its slot, then use the old id directly and through a
// stale expiry-heap entry.
func TestStaleResourceIDPanics(t *testing.T) {
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("%s: no panic", what)
			}
		}()
		f()
	}
	tab := newResourceTable()
	old := tab.insert("old")
	oldID := old.id
	tab.remove(old)
	reused := tab.insert("new")
	if slotOf(reused.id) != slotOf(oldID) {
		t.Fatalf("slot not reused (LIFO): %d vs %d", slotOf(reused.id), slotOf(oldID))
	}
	mustPanic("arena.at with a stale id", func() { tab.arena.at(oldID) })
	if got := tab.arena.at(reused.id); got.name != "new" {
		t.Fatalf("live id finds %q", got.name)
	}

	// A heap that still lists the freed record (a missing heap removal).
	heap := newExpiryHeap(tab.arena)
	heap.ids = append(heap.ids, oldID)
	mustPanic("expiry heap with a stale entry", func() { heap.min() })
}
