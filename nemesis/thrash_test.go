package nemesis

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// electNext makes the fake hand leadership to the next node whenever a
// fault lands, as an election would.
func electNext(f *fakeCluster) {
	for i, id := range f.nodes {
		if id == f.leader {
			f.leader = f.nodes[(i+1)%len(f.nodes)]
			return
		}
	}
}

// thrashRound is one fault round read back from the call log.
type thrashRound struct {
	kind, victim, leader string
	start, end           time.Duration
}

// thrashRounds pairs fault and undo calls; it fails the test on anything
// else, so a round left unhealed before the next one shows up.
func thrashRounds(t *testing.T, calls []call) []thrashRound {
	t.Helper()
	var rounds []thrashRound
	for i := 0; i < len(calls); i += 2 {
		if i+1 >= len(calls) {
			t.Fatalf("call %+v is never undone", calls[i])
		}
		c, u := calls[i], calls[i+1]
		switch {
		case c.op == "Pause" && u.op == "Resume" && u.id == c.id:
			rounds = append(rounds, thrashRound{"pause", c.id, c.leader, c.at, u.at})
		case c.op == "Cut" && u.op == "Cut" && u.arg.([][2]string) == nil:
			pairs := c.arg.([][2]string)
			rounds = append(rounds, thrashRound{"isolate", pairs[0][0], c.leader, c.at, u.at})
		default:
			t.Fatalf("calls %+v then %+v are not a fault and its undo", c, u)
		}
	}
	return rounds
}

// Goal: thrashLeader knocks out whoever leads now, round after round, for
// the whole window, healing in between, paced by the election timeout.
// Method: a 5-node fake that elects the next node on every fault; read
// the rounds back from the call log.
func TestThrashLeader(t *testing.T) {
	const d = 10 * time.Second
	tests := []struct {
		name    string
		timeout time.Duration // 0: the cluster does not say
		window  time.Duration
		rounds  [2]int // inclusive bounds: a round takes 2 to 4 timeouts
	}{
		{"cluster timeout", 200 * time.Millisecond, d, [2]int{12, 25}},
		{"default timeout", 0, d, [2]int{5, 10}},
		{"rounds bounded", 200 * time.Millisecond, 10 * time.Minute, [2]int{thrashRoundsMax, thrashRoundsMax}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, rec := newFake(5, "n1"), &fakeRecorder{}
				f.onFault = electNext
				var c Cluster = f
				timeout := tc.timeout
				if timeout == 0 {
					c = struct{ Cluster }{f} // hides ElectionTimeout
					timeout = defaultElectionTimeout
				}
				if err := mustByName(t, "thrashLeader").Inject(t.Context(), c, seeded(9), tc.window, rec); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(f.born); took != tc.window {
					t.Errorf("took %s, want %s", took, tc.window)
				}
				rounds := thrashRounds(t, f.callLog())
				if n := len(rounds); n < tc.rounds[0] || n > tc.rounds[1] {
					t.Errorf("%d rounds, want %d..%d", n, tc.rounds[0], tc.rounds[1])
				}
				kinds := map[string]int{}
				var healedAt time.Duration
				for i, r := range rounds {
					kinds[r.kind]++
					if r.victim != r.leader {
						t.Errorf("round %d hit %s while %s led", i, r.victim, r.leader)
					}
					// Only a round cut short by the end of the window may be shorter.
					if held := r.end - r.start; (held < timeout && r.end != tc.window) || held > 2*timeout {
						t.Errorf("round %d held %s, want %s..%s", i, held, timeout, 2*timeout)
					}
					if gap := r.start - healedAt; i > 0 && (gap < timeout || gap > 2*timeout) {
						t.Errorf("round %d came %s after the heal, want %s..%s", i, gap, timeout, 2*timeout)
					}
					healedAt = r.end
				}
				if kinds["pause"] == 0 || kinds["isolate"] == 0 {
					t.Errorf("round kinds %v, want both pause and isolate", kinds)
				}
				ws := rec.all()
				if len(ws) != len(rounds) {
					t.Fatalf("%d windows for %d rounds", len(ws), len(rounds))
				}
				for i, w := range ws {
					want := fmt.Sprintf("%s %s", rounds[i].kind, rounds[i].victim)
					if w.target != want || w.end.Sub(w.start) != rounds[i].end-rounds[i].start {
						t.Errorf("window %d %+v, want %q over round %+v", i, w, want, rounds[i])
					}
				}
				if l := f.lingering(); len(l) > 0 {
					t.Errorf("faults left in place: %v", l)
				}
			})
		})
	}
}

// Goal: while no leader is known thrashLeader waits instead of acting.
// Method: the fake loses its leader at the first fault; exactly one round
// must run and the window still last d.
func TestThrashLeaderWithoutLeader(t *testing.T) {
	const d = 5 * time.Second
	synctest.Test(t, func(t *testing.T) {
		f, rec := newFake(3, "n1"), &fakeRecorder{}
		f.onFault = func(f *fakeCluster) { f.leader = "" }
		if err := mustByName(t, "thrashLeader").Inject(t.Context(), f, seeded(2), d, rec); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(f.born); took != d {
			t.Errorf("took %s, want %s", took, d)
		}
		if rounds := thrashRounds(t, f.callLog()); len(rounds) != 1 {
			t.Errorf("rounds %+v, want exactly one", rounds)
		}
	})
}
