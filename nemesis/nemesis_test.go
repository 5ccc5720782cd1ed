package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

// Goal: the catalogue is well formed. Method: names are unique camelCase
// verb+target, ByName finds each one and the alias, and rejects junk.
func TestCatalogueNames(t *testing.T) {
	camel := regexp.MustCompile(`^[a-z]+([A-Z][a-z]+)+$`)
	seen := map[string]bool{}
	for _, name := range Names() {
		if !camel.MatchString(name) {
			t.Errorf("name %q is not camelCase verb+target", name)
		}
		if seen[name] {
			t.Errorf("name %q listed twice", name)
		}
		seen[name] = true
		if n := mustByName(t, name); n.Name() != name {
			t.Errorf("ByName(%q) returned %q", name, n.Name())
		}
	}
	if n := mustByName(t, "partitionLeader"); n.Name() != "isolateLeader" {
		t.Errorf("alias partitionLeader resolved to %q", n.Name())
	}
	if _, ok := ByName("meteorStrike"); ok {
		t.Error("ByName found an unknown nemesis")
	}
}

// needs says what a nemesis requires of the cluster to be available.
type needs struct {
	nodes   int
	leader  bool
	clients bool
}

var requirements = map[string]needs{
	"partitionRandomHalves":     {nodes: 2},
	"isolateLeader":             {nodes: 2, leader: true},
	"isolateSingle":             {nodes: 2},
	"partitionMajorityMinority": {nodes: 3, leader: true},
	"partitionBridge":           {nodes: 3},
	"partitionRing":             {nodes: 4},
	"killLeader":                {nodes: 1, leader: true},
	"killFollower":              {nodes: 2, leader: true},
	"killRandom":                {nodes: 1},
	"wipeNode":                  {nodes: 3},
	"wipeMajority":              {nodes: 3},
	"pauseLeader":               {nodes: 1, leader: true},
	"pauseRandom":               {nodes: 1},
	"skewClockLeader":           {nodes: 1, leader: true},
	"skewClockRandom":           {nodes: 1},
	"driftClockLeader":          {nodes: 1, leader: true},
	"driftClockRandom":          {nodes: 1},
	"jumpClockLeader":           {nodes: 1, leader: true},
	"jumpClockRandom":           {nodes: 1},
	"thrashLeader":              {nodes: 3, leader: true},
	"slowDiskLeader":            {nodes: 1, leader: true},
	"failDiskFollower":          {nodes: 2, leader: true},
	"pauseClient":               {clients: true},
}

// Goal: Available matches each nemesis's requirements, and an unavailable
// nemesis refuses with ErrNotApplicable without touching the cluster.
// Method: every nemesis on clusters of 1..6 nodes, with and without a
// leader and clients.
func TestAvailability(t *testing.T) {
	if got, want := len(requirements), len(All()); got != want {
		t.Fatalf("requirements cover %d nemeses, catalogue has %d", got, want)
	}
	for _, nem := range All() {
		req, ok := requirements[nem.Name()]
		if !ok {
			t.Fatalf("no requirements listed for %s", nem.Name())
		}
		for n := 1; n <= 6; n++ {
			for _, leader := range []bool{false, true} {
				for _, clients := range []int{0, 3} {
					f := newFake(n, "")
					if leader {
						f.leader = "n1"
					}
					f.clients = clients
					want := n >= req.nodes && (leader || !req.leader) && (clients > 0 || !req.clients)
					if got := nem.Available(f); got != want {
						t.Errorf("%s on n=%d leader=%v clients=%d: Available=%v, want %v", nem.Name(), n, leader, clients, got, want)
					}
					if want {
						continue
					}
					rec := &fakeRecorder{}
					err := nem.Inject(t.Context(), f, seeded(1), time.Second, rec)
					if !errors.Is(err, ErrNotApplicable) {
						t.Errorf("%s on n=%d leader=%v clients=%d: Inject = %v, want ErrNotApplicable", nem.Name(), n, leader, clients, err)
					}
					if calls := f.callLog(); len(calls) > 0 || len(rec.all()) > 0 {
						t.Errorf("%s not applicable but made calls %v / windows %v", nem.Name(), calls, rec.all())
					}
				}
			}
		}
	}
}

// Goal: each single-node nemesis calls the right methods on the right node
// with in-range arguments, holds the fault for d, undoes it and records the
// window. Method: inject into a 5-node fake (leader n2) inside a synctest
// bubble over several seeds and inspect the call log.
func TestSingleNodeNemeses(t *testing.T) {
	const d = 3 * time.Second
	abs := func(x time.Duration) time.Duration { return max(x, -x) }
	tests := []struct {
		name  string
		ops   []string
		on    role
		argOK func(arg any) bool // on the first call
	}{
		{"killLeader", []string{"Crash", "Restart"}, leaderNode, nil},
		{"killFollower", []string{"Crash", "Restart"}, followerNode, nil},
		{"killRandom", []string{"Crash", "Restart"}, anyNode, nil},
		{"wipeNode", []string{"WipeDisk", "Restart"}, anyNode, nil},
		{"pauseLeader", []string{"Pause", "Resume"}, leaderNode, nil},
		{"pauseRandom", []string{"Pause", "Resume"}, anyNode, nil},
		{"skewClockLeader", []string{"SetClockOffset", "SetClockOffset"}, leaderNode,
			func(a any) bool { return abs(a.(time.Duration)) <= 10*time.Second }},
		{"skewClockRandom", []string{"SetClockOffset", "SetClockOffset"}, anyNode,
			func(a any) bool { return abs(a.(time.Duration)) <= 10*time.Second }},
		{"driftClockLeader", []string{"SetClockRate", "SetClockRate"}, leaderNode,
			func(a any) bool { r := a.(float64); return r >= 0.5 && r <= 2 && r != 1 }},
		{"driftClockRandom", []string{"SetClockRate", "SetClockRate"}, anyNode,
			func(a any) bool { r := a.(float64); return r >= 0.5 && r <= 2 && r != 1 }},
		{"jumpClockLeader", []string{"JumpClock"}, leaderNode,
			func(a any) bool { j := a.(time.Duration); return j > 0 && j <= 30*time.Second }},
		{"jumpClockRandom", []string{"JumpClock"}, anyNode,
			func(a any) bool { j := a.(time.Duration); return j > 0 && j <= 30*time.Second }},
		{"slowDiskLeader", []string{"SetDiskFault", "SetDiskFault"}, leaderNode,
			func(a any) bool {
				df := a.(diskFault)
				return !df.fail && df.delay >= 50*time.Millisecond && df.delay <= 500*time.Millisecond
			}},
		{"failDiskFollower", []string{"SetDiskFault", "SetDiskFault"}, followerNode,
			func(a any) bool { return a.(diskFault) == diskFault{fail: true} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(10) {
				synctest.Test(t, func(t *testing.T) {
					f, rec := newFake(5, "n2"), &fakeRecorder{}
					if err := mustByName(t, tc.name).Inject(t.Context(), f, seeded(seed), d, rec); err != nil {
						t.Fatalf("seed %d: Inject: %v", seed, err)
					}
					if took := time.Since(f.born); took != d {
						t.Errorf("seed %d: Inject took %s, want %s", seed, took, d)
					}
					calls := f.callLog()
					var ops []string
					for _, c := range calls {
						ops = append(ops, c.op)
					}
					if !slices.Equal(ops, tc.ops) {
						t.Fatalf("seed %d: calls %v, want %v", seed, ops, tc.ops)
					}
					id := calls[0].id
					for _, c := range calls {
						if c.id != id {
							t.Errorf("seed %d: calls hit %s and %s", seed, id, c.id)
						}
					}
					switch tc.on {
					case leaderNode:
						if id != "n2" {
							t.Errorf("seed %d: hit %s, not the leader n2", seed, id)
						}
					case followerNode:
						if id == "n2" {
							t.Errorf("seed %d: hit the leader, want a follower", seed)
						}
					}
					if tc.argOK != nil && !tc.argOK(calls[0].arg) {
						t.Errorf("seed %d: argument %v out of range", seed, calls[0].arg)
					}
					if last := calls[len(calls)-1]; len(calls) > 1 && last.at != d {
						t.Errorf("seed %d: undo at %s, want %s", seed, last.at, d)
					}
					if l := f.lingering(); len(l) > 0 {
						t.Errorf("seed %d: faults left in place: %v", seed, l)
					}
					ws := rec.all()
					if len(ws) != 1 || ws[0].name != tc.name || !strings.HasPrefix(ws[0].target, id) ||
						!ws[0].start.Equal(f.born) || !ws[0].end.Equal(f.born.Add(d)) {
						t.Errorf("seed %d: windows %+v, want one %s on %s over [0, %s]", seed, ws, tc.name, id, d)
					}
				})
			}
		})
	}
}

// Goal: wipeMajority wipes a majority at once and restarts exactly those
// nodes. Method: inject into 3- and 5-node fakes and inspect the call log.
func TestWipeMajority(t *testing.T) {
	const d = 2 * time.Second
	for _, n := range []int{3, 4, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, rec := newFake(n, "n1"), &fakeRecorder{}
				if err := mustByName(t, "wipeMajority").Inject(t.Context(), f, seeded(7), d, rec); err != nil {
					t.Fatal(err)
				}
				var wiped, restarted []string
				for _, c := range f.callLog() {
					switch {
					case c.op == "WipeDisk" && c.at == 0:
						wiped = append(wiped, c.id)
					case c.op == "Restart" && c.at == d:
						restarted = append(restarted, c.id)
					default:
						t.Errorf("unexpected call %+v", c)
					}
				}
				if len(wiped) != n/2+1 || !slices.Equal(wiped, restarted) {
					t.Errorf("wiped %v then restarted %v, want the same majority of %d", wiped, restarted, n)
				}
				if ws := rec.all(); len(ws) != 1 || ws[0].target != strings.Join(wiped, ",") {
					t.Errorf("windows %+v, want one on %v", ws, wiped)
				}
				if l := f.lingering(); len(l) > 0 {
					t.Errorf("faults left in place: %v", l)
				}
			})
		})
	}
}

// Goal: pauseClient pauses a valid client for d and records it. Method:
// inject with several seeds and check the client index and the window.
func TestPauseClient(t *testing.T) {
	const d = 4 * time.Second
	synctest.Test(t, func(t *testing.T) {
		hit := map[int]bool{}
		for seed := range uint64(30) {
			f, rec := newFake(3, "n1"), &fakeRecorder{}
			if err := mustByName(t, "pauseClient").Inject(t.Context(), f, seeded(seed), d, rec); err != nil {
				t.Fatal(err)
			}
			calls := f.callLog()
			if len(calls) != 1 || calls[0].op != "PauseClient" {
				t.Fatalf("calls %+v, want one PauseClient", calls)
			}
			k := calls[0].arg.(int)
			if k < 0 || k >= f.clients {
				t.Errorf("paused client %d of %d", k, f.clients)
			}
			hit[k] = true
			ws := rec.all()
			if len(ws) != 1 || ws[0].target != fmt.Sprintf("client%d", k) || ws[0].end.Sub(ws[0].start) != d {
				t.Errorf("windows %+v, want client%d for %s", ws, k, d)
			}
		}
		if len(hit) != 3 {
			t.Errorf("30 seeds paused only clients %v of 3", hit)
		}
	})
}

// Goal: every nemesis undoes its fault when ctx ends mid-fault and reports
// ctx's error; none acts on an already-ended ctx. Method: cancel at 1 s of
// a 4 s window in a synctest bubble, then inspect the fake's state.
func TestCancelMidFault(t *testing.T) {
	const d, cancelAt = 4 * time.Second, time.Second
	for _, nem := range All() {
		t.Run(nem.Name(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, rec := newFake(5, "n1"), &fakeRecorder{}
				ctx, cancel := context.WithCancel(t.Context())
				time.AfterFunc(cancelAt, cancel)
				err := nem.Inject(ctx, f, seeded(3), d, rec)
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Inject = %v, want context.Canceled", err)
				}
				if took := time.Since(f.born); took != cancelAt {
					t.Errorf("Inject returned after %s, want %s", took, cancelAt)
				}
				if l := f.lingering(); len(l) > 0 {
					t.Errorf("faults left in place: %v", l)
				}
				if len(rec.all()) == 0 {
					t.Error("no fault window recorded")
				}
				for _, w := range rec.all() {
					if w.end.After(f.born.Add(cancelAt)) && nem.Name() != "pauseClient" {
						t.Errorf("window %+v ends after the cancel", w)
					}
				}

				before := len(f.callLog())
				if err := nem.Inject(ctx, f, seeded(3), d, rec); !errors.Is(err, context.Canceled) {
					t.Errorf("Inject on ended ctx = %v, want context.Canceled", err)
				}
				if after := len(f.callLog()); after != before {
					t.Errorf("Inject on ended ctx made %d calls", after-before)
				}
			})
		})
	}
}

// deterministic lists the nemeses that draw nothing: they hit the leader
// in a fixed way.
var deterministic = map[string]bool{"killLeader": true, "pauseLeader": true, "isolateLeader": true}

// Goal: every nemesis draws its choices from the rng it is given. Method:
// the same seed on two fresh fakes gives identical call logs and windows,
// and every nemesis that draws anything varies over 40 seeds.
func TestReproducibleFromSeed(t *testing.T) {
	const d = 5 * time.Second
	for _, nem := range All() {
		t.Run(nem.Name(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				run := func(seed uint64) string {
					f, rec := newFake(5, "n3"), &fakeRecorder{}
					start := time.Now()
					if err := nem.Inject(t.Context(), f, seeded(seed), d, rec); err != nil {
						t.Fatal(err)
					}
					var b strings.Builder
					for _, c := range f.callLog() {
						fmt.Fprintf(&b, "%+v\n", c)
					}
					for _, w := range rec.all() {
						fmt.Fprintf(&b, "%s %s %s %s\n", w.name, w.target, w.start.Sub(start), w.end.Sub(start))
					}
					return b.String()
				}
				if a, b := run(11), run(11); a != b {
					t.Errorf("seed 11 gave different runs:\n%s\nvs\n%s", a, b)
				}
				if deterministic[nem.Name()] {
					return
				}
				distinct := map[string]bool{}
				for seed := range uint64(40) {
					distinct[run(seed)] = true
				}
				if len(distinct) < 2 {
					t.Errorf("40 seeds gave one outcome")
				}
			})
		})
	}
}

// Goal: cluster errors surface and never leave a half-applied fault
// behind. Method: the fake fails one call; check the returned error, the
// calls made, the recorded windows and what is left in place.
func TestClusterErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		nemesis  string
		failing  func(f *fakeCluster) string // "Op id" that fails
		leader   string
		windows  int
		leftOver []string
	}{
		// n1 fails to crash: nothing changed, nothing to record.
		{"crash fails", "killLeader", func(*fakeCluster) string { return "Crash n1" }, "n1", 0, nil},
		// The restart fails: the window is still recorded and the node stays down.
		{"restart fails", "killLeader", func(*fakeCluster) string { return "Restart n1" }, "n1", 1, []string{"n1 crashed"}},
		// The second node of the majority fails to wipe: the first comes back.
		{"wipe fails half-way", "wipeMajority", func(f *fakeCluster) string {
			return "WipeDisk " + shuffled(f, seeded(4))[1] // the order wipeMajority draws
		}, "n1", 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, rec := newFake(3, tc.leader), &fakeRecorder{}
				f.errs = map[string]error{tc.failing(f): boom}
				err := mustByName(t, tc.nemesis).Inject(t.Context(), f, seeded(4), time.Second, rec)
				if !errors.Is(err, boom) {
					t.Errorf("Inject = %v, want boom", err)
				}
				if ws := rec.all(); len(ws) != tc.windows {
					t.Errorf("windows %+v, want %d", ws, tc.windows)
				}
				if l := f.lingering(); !slices.Equal(l, tc.leftOver) {
					t.Errorf("left in place %v, want %v", l, tc.leftOver)
				}
				last := f.callLog()[len(f.callLog())-1]
				if tc.nemesis == "wipeMajority" && (last.op != "Restart" || last.at != 0) {
					t.Errorf("last call %+v, want an immediate Restart of a wiped node", last)
				}
			})
		})
	}
}
