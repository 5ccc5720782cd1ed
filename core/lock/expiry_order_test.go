package lock

import (
	"slices"
	"testing"
	"time"
)

// TestExpiryOrderSurvivesRestore: goal — leases due at the same instant
// expire in one order on every replica, whether it replayed the log or
// restored a snapshot (whose heap is rebuilt in name order), and Digest
// covers that order. Method: an acquire_many over "b", "a" (equal expiry)
// with waiters settled in the order that leaves "a" behind in the heap;
// the expiry order and digest of the state and of its restored copy.
func TestExpiryOrderSurvivesRestore(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	index := uint64(0)
	apply := func(st *State, cmd Command, atMs int64) {
		cmd.Mono = atMs * int64(time.Millisecond)
		st.Apply(Entry{Index: index, Term: 1, Command: cmd})
	}
	for i, cmd := range []Command{many('m', X, 1000, 0, "b", "a"), acq("b", 'y', X, 1000, 5000), acq("a", 'x', X, 1000, 5000)} {
		index++
		apply(s, cmd, int64(i))
	}
	restored := mustNew(t, s.Config())
	if err := restored.Restore(s.Snapshot()); err != nil {
		t.Fatal(err)
	}
	order := func(st *State) []string {
		var names []string
		d := decoder{b: st.expiry.appendOrder(nil)}
		for d.off < len(d.b) && d.err == nil {
			names = append(names, d.string())
		}
		return names
	}
	// Ties break on the token: the request order of the acquire_many.
	if got, want := order(s), []string{"b", "a"}; !slices.Equal(got, want) {
		t.Fatalf("replayed expiry order %q, want %q", got, want)
	}
	if got, want := order(restored), order(s); !slices.Equal(got, want) {
		t.Fatalf("restored expiry order %q, replayed %q", got, want)
	}
	if restored.Digest() != s.Digest() {
		t.Fatalf("digest differs after restore")
	}
	// The waiters are granted in that order once the leases expire.
	index++
	apply(s, Command{Op: OpTick}, 1500)
	apply(restored, Command{Op: OpTick}, 1500)
	if s.Digest() != restored.Digest() {
		t.Fatalf("replicas diverged at the shared expiry")
	}
	if b, a := s.Status("b").Holders, s.Status("a").Holders; len(a) != 1 || len(b) != 1 || b[0].Token > a[0].Token {
		t.Fatalf("waiters granted out of expiry order: b %v, a %v", b, a)
	}
}
