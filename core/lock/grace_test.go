package lock

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// graced gives an acquire a grace window.
func graced(cmd Command, graceMs int64) Command {
	cmd.GraceMs = graceMs
	return cmd
}

// TestGrace: goal — a lease with a grace window keeps its resource from
// everyone else for the window after it expires (not after a release), a
// renew in the window revives it with its token, and once the window ends
// the queue head is granted. Method: scripted logs, every answer and event
// compared, a snapshot round trip after each step (runSteps).
func TestGrace(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{name: "expiry starts the window, a renew in it revives with the token", steps: []step{
			{at: 0, cmd: graced(acq("r", 'a', X, 100, 0), 50), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 100, cmd: acq("r", 'b', X, 100, 0), want: "denied", events: []string{"grace r a#1@100~150"}},
			{at: 110, cmd: acq("r", 'c', S, 100, 0), want: "denied"},
			{at: 120, cmd: status("r"), want: "holders=[a#1@100~150] queue=[]"},
			{at: 130, cmd: renew("r", 'a', 0), want: "renewed a#1@230", events: []string{"revive r a#1@230"}},
			{at: 140, cmd: acq("r", 'b', X, 100, 0), want: "denied"},
			{at: 150, cmd: renew("r", 'a', 0), want: "renewed a#1@250", events: []string{"renew r a#1@250"}},
		}},
		{name: "the window's end grants the queue head a higher token", steps: []step{
			{at: 0, cmd: graced(acq("r", 'a', X, 100, 0), 50), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 10, cmd: acq("r", 'b', X, 100, 1000), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 100, cmd: tick(), want: "t=100", events: []string{"grace r a#1@100~150"}},
			{at: 149, cmd: tick(), want: "t=149"},
			{at: 150, cmd: tick(), want: "t=150", events: []string{"expire r a#1@100~150", "grant* r b#2@250"}},
			{at: 160, cmd: renew("r", 'a', 0), want: "not_holder"},
			{at: 170, cmd: rel("r", 'a'), want: "not_holder"},
		}},
		{name: "a release in the window frees at once; a release never starts one", steps: []step{
			{at: 0, cmd: graced(acq("r", 'a', X, 100, 0), 100), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 5, cmd: acq("r", 'b', X, 100, 1000), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 120, cmd: rel("r", 'a'), want: "released a#1@100~200",
				events: []string{"grace r a#1@100~200", "release r a#1@100~200", "grant* r b#2@220"}},
			{at: 130, cmd: rel("r", 'b'), want: "released b#2@220", events: []string{"release r b#2@220", "freed r"}},
			{at: 130, cmd: graced(acq("r", 'c', X, 100, 0), 100), want: "granted c#3@230", events: []string{"grant r c#3@230"}},
			{at: 140, cmd: rel("r", 'c'), want: "released c#3@230", events: []string{"release r c#3@230", "freed r"}},
			{at: 140, cmd: acq("r", 'd', X, 100, 0), want: "granted d#4@240", events: []string{"grant r d#4@240"}},
		}},
		{name: "log time leaping past the window expires at once", steps: []step{
			{at: 0, cmd: graced(acq("r", 'a', X, 100, 0), 50), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 150, cmd: acq("r", 'b', X, 100, 0), want: "granted b#2@250",
				events: []string{"expire r a#1@100", "freed r", "grant r b#2@250"}},
		}},
		{name: "a renew to a shorter ttl shortens the grace with it", steps: []step{
			{at: 0, cmd: graced(acq("r", 'a', X, 100, 0), 100), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 10, cmd: renew("r", 'a', 20), want: "renewed a#1@30", events: []string{"renew r a#1@30"}},
			{at: 30, cmd: tick(), want: "t=30", events: []string{"grace r a#1@30~50"}},
			{at: 50, cmd: tick(), want: "t=50", events: []string{"expire r a#1@30~50", "freed r"}},
		}},
		{name: "a shared lease in grace blocks like a shared holder", steps: []step{
			{at: 0, cmd: graced(acq("r", 'a', S, 100, 0), 50), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 100, cmd: acq("r", 'b', X, 100, 0), want: "denied", events: []string{"grace r a#1@100~150"}},
			{at: 110, cmd: acq("r", 'c', S, 100, 0), want: "granted c#2@210", events: []string{"grant r c#2@210"}},
		}},
		{name: "a queued request's grace is its grant's", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 10, cmd: graced(acq("r", 'b', X, 100, 1000), 30), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 100, cmd: tick(), want: "t=100", events: []string{"expire r a#1@100", "grant* r b#2@200"}},
			{at: 200, cmd: tick(), want: "t=200", events: []string{"grace r b#2@200~230"}},
			{at: 230, cmd: tick(), want: "t=230", events: []string{"expire r b#2@200~230", "freed r"}},
		}},
		{name: "grace above the ttl is refused", steps: []step{
			{at: 0, cmd: graced(acq("r", 'a', X, 100, 0), 101), want: "invalid_argument"},
			{at: 0, cmd: graced(acq("r", 'a', X, 100, 0), -1), want: "invalid_argument"},
			{at: 0, cmd: graced(acq("r", 'a', X, 100, 0), 100), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, DefaultConfig(), tc.steps) })
	}
}

// TestGraceCheck: goal — the front ends can tell a bad grace from other
// invalid input (bad_grace), and grace 0..ttl passes.
func TestGraceCheck(t *testing.T) {
	cfg := DefaultConfig()
	for _, tc := range []struct {
		ttl, grace int64
		bad        bool
	}{{100, 0, false}, {100, 100, false}, {100, 101, true}, {100, -1, true}} {
		cmd := graced(acq("r", 'a', X, tc.ttl, 0), tc.grace)
		err := cfg.Check(&cmd)
		if got := errors.Is(err, ErrBadGrace); got != tc.bad || (tc.bad && !errors.Is(err, ErrInvalid)) {
			t.Errorf("ttl %d grace %d: Check = %v, want bad grace %v", tc.ttl, tc.grace, err, tc.bad)
		}
	}
}

// TestGraceValidStatus: goal — a lease in its window is listed (it blocks)
// but marked, so validate can call its token not valid.
func TestGraceValidStatus(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	applyAt(s, 1, 0, graced(acq("r", 'a', X, 100, 0), 50))
	applyAt(s, 2, 100, tick())
	st := s.Status("r")
	if len(st.Holders) != 1 || !st.Holders[0].InGrace() || st.Holders[0].GraceMs != 50 {
		t.Fatalf("status in the window: %+v, want one holder in grace", st)
	}
	applyAt(s, 3, 110, renew("r", 'a', 0))
	if st := s.Status("r"); st.Holders[0].InGrace() {
		t.Fatalf("status after the revive: %+v, want held", st)
	}
}

// TestGraceSnapshotVersions: goal — a version 6 snapshot (before grace
// windows) still restores, to the state it was written from, and a state
// with a grace window (on a holder and on a waiter) round-trips through
// the current version with the window, its start and the waiter's grace
// kept, while version 6 refuses to write it. Method: encode both versions.
func TestGraceSnapshotVersions(t *testing.T) {
	plain := mustNew(t, DefaultConfig())
	applyAt(plain, 1, 0, acq("r", 'a', X, 1000, 0))
	applyAt(plain, 2, 5, acq("r", 'b', X, 1000, 2000))
	v6 := plain.snapshotVersion(6)
	restored := mustNew(t, DefaultConfig())
	if err := restored.Restore(v6); err != nil {
		t.Fatalf("restore v6: %v", err)
	}
	if !bytes.Equal(restored.Snapshot(), plain.Snapshot()) {
		t.Fatal("v6 snapshot restored to a different state")
	}

	s := mustNew(t, DefaultConfig())
	applyAt(s, 1, 0, graced(acq("r", 'a', X, 100, 0), 50))
	applyAt(s, 2, 5, graced(acq("r", 'b', X, 100, 2000), 30))
	applyAt(s, 3, 120, tick()) // a in its window until 150
	again := mustNew(t, DefaultConfig())
	if err := again.Restore(s.Snapshot()); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got := describeStatus(again.Status("r")); got != "holders=[a#1@100~150] queue=[b]" {
		t.Fatalf("restored status %q", got)
	}
	if _, events := applyAt(again, 4, 150, tick()); !slices.Equal(events, []string{"expire r a#1@100~150", "grant* r b#2@250"}) {
		t.Fatalf("restored window's end: %q", events)
	}
	if got := again.Status("r").Holders[0].GraceMs; got != 30 {
		t.Fatalf("the waiter's grace after its grant: %d, want 30", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a grace window written into a version 6 snapshot")
		}
	}()
	s.snapshotVersion(6)
}
