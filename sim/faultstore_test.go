package sim_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"
	"github.com/pingcap/failpoint"

	"github.com/lockstep/lockstep/sim"
)

// TestFailpointLogStore: goal — the injected disk faults do what the
// nemeses rely on: "return(true)" fails writes, "return(ms)" delays them,
// disabled is a plain store. Method: write through the wrapper in a bubble.
func TestFailpointLogStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := sim.WithFailpoints(sim.FailpointStoreLogs("fp1"), raft.NewInmemStore())
		name := sim.FailpointStoreLogs("fp1")
		entry := func(i uint64) *raft.Log { return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand} }
		if err := store.StoreLog(entry(1)); err != nil {
			t.Fatalf("disabled failpoint: %v", err)
		}
		if err := failpoint.Enable(name, "return(true)"); err != nil {
			t.Fatal(err)
		}
		if err := store.StoreLog(entry(2)); !errors.Is(err, sim.ErrDiskFault) {
			t.Fatalf("failing disk: err %v, want ErrDiskFault", err)
		}
		if err := failpoint.Enable(name, "return(250)"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := store.StoreLog(entry(2)); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 250*time.Millisecond {
			t.Fatalf("slow disk took %v, want 250ms", took)
		}
		if err := failpoint.Disable(name); err != nil {
			t.Fatal(err)
		}
		if last, _ := store.LastIndex(); last != 2 {
			t.Fatalf("last index %d, want 2", last)
		}
	})
}
