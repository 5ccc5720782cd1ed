package sim

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

var faultyLink = Link{LatencyBase: time.Millisecond, LatencyJitter: 10 * time.Millisecond, DropRate: 0.2, DupRate: 0.1}

// decide draws one fate as a send would, for tests of the decisions alone.
func (n *Network) decide(from, to string, mayDup bool) decision {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.decideLocked(from, to, mayDup)
}

// decisions draws a fixed sequence of fates from a fresh network with seed.
func decisions(seed uint64) []decision {
	n := NewNetwork(Options{Seed: seed, Link: faultyLink})
	ids := []string{"a", "b", "c"}
	out := make([]decision, 0, 300)
	for i := range 300 {
		out = append(out, n.decide(ids[i%3], ids[(i+1)%3], i%2 == 0))
	}
	return out
}

// Goal: the seed alone fixes the random decisions. Method: draw the same
// call sequence from networks with equal and with different seeds.
func TestDecisionsDependOnlyOnSeed(t *testing.T) {
	a, b, other := decisions(7), decisions(7), decisions(8)
	if !slices.Equal(a, b) {
		t.Fatal("same seed gave different decisions")
	}
	if slices.Equal(a, other) {
		t.Fatal("different seeds gave identical decisions")
	}
}

// Goal: decisions follow the link's distribution. Method: draw many fates
// and check the drop and duplication rates and the latency range.
func TestDecisionsFollowLink(t *testing.T) {
	const draws = 20000
	n := NewNetwork(Options{Seed: 1, Link: faultyLink})
	var drops, dups int
	for range draws {
		d := n.decide("a", "b", true)
		if d.drop {
			drops++
			continue
		}
		if d.dup {
			dups++
		}
		checkLatency(t, d.latency)
		if d.dup {
			checkLatency(t, d.dupLatency)
		}
	}
	if r := float64(drops) / draws; r < 0.18 || r > 0.22 {
		t.Errorf("drop rate %.3f, want about %.2f", r, faultyLink.DropRate)
	}
	if r := float64(dups) / float64(draws-drops); r < 0.08 || r > 0.12 {
		t.Errorf("duplication rate %.3f, want about %.2f", r, faultyLink.DupRate)
	}
}

func checkLatency(t *testing.T, l time.Duration) {
	t.Helper()
	if hi := faultyLink.LatencyBase + faultyLink.LatencyJitter; l < faultyLink.LatencyBase || l > hi {
		t.Fatalf("latency %v outside [%v, %v]", l, faultyLink.LatencyBase, hi)
	}
}

// Goal: SetLink overrides the default for one direction only and a custom
// LatencyFunc draws from the network's generator. Method: compare fates on
// both directions of an overridden link.
func TestSetLinkIsDirected(t *testing.T) {
	n := NewNetwork(Options{Seed: 1, Link: Link{LatencyBase: time.Second}})
	n.SetLink("a", "b", Link{Latency: func(rng *rand.Rand, from, to string) time.Duration {
		return time.Duration(rng.IntN(5)) * time.Millisecond
	}})
	for range 100 {
		if d := n.decide("a", "b", false); d.latency >= 5*time.Millisecond {
			t.Fatalf("a->b latency %v ignores the custom LatencyFunc", d.latency)
		}
		if d := n.decide("b", "a", false); d.latency != time.Second {
			t.Fatalf("b->a latency %v, want the default 1s", d.latency)
		}
	}
}

// Goal: partition, isolation, cuts and heal compose as documented. Method:
// a table of fault setups and the expected reachability of directed pairs.
func TestReachability(t *testing.T) {
	type pair struct{ from, to string }
	tests := []struct {
		name  string
		setup func(n *Network)
		open  []pair
		cut   []pair
	}{
		{"none", func(*Network) {}, []pair{{"a", "b"}, {"c", "a"}}, nil},
		{"groups", func(n *Network) { n.Partition([]string{"a"}, []string{"b", "c"}) },
			[]pair{{"b", "c"}, {"c", "b"}, {"a", "a"}}, []pair{{"a", "b"}, {"c", "a"}, {"a", "d"}}},
		{"unlisted share a group", func(n *Network) { n.Partition([]string{"a"}) },
			[]pair{{"b", "c"}, {"d", "b"}}, []pair{{"a", "b"}, {"b", "a"}}},
		{"isolate", func(n *Network) { n.Isolate("b") },
			[]pair{{"a", "c"}, {"b", "b"}}, []pair{{"a", "b"}, {"b", "c"}}},
		{"one-way cut", func(n *Network) { n.Cut("a", "b") },
			[]pair{{"b", "a"}, {"a", "c"}}, []pair{{"a", "b"}}},
		{"two-way cut", func(n *Network) { n.CutBoth("a", "b") },
			[]pair{{"a", "c"}}, []pair{{"a", "b"}, {"b", "a"}}},
		{"heal clears all", func(n *Network) {
			n.Partition([]string{"a"}, []string{"b"})
			n.Isolate("c")
			n.Cut("b", "a")
			n.Heal()
		}, []pair{{"a", "b"}, {"b", "a"}, {"c", "a"}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := NewNetwork(Options{})
			tc.setup(n)
			n.mu.Lock()
			defer n.mu.Unlock()
			for _, p := range tc.open {
				if !n.reachableLocked(p.from, p.to) {
					t.Errorf("%s->%s cut, want open", p.from, p.to)
				}
			}
			for _, p := range tc.cut {
				if n.reachableLocked(p.from, p.to) {
					t.Errorf("%s->%s open, want cut", p.from, p.to)
				}
			}
		})
	}
}

// callTrace runs a fixed sequential Call workload on a faulty network with
// seed and returns the event log and the outcome of each call.
func callTrace(t *testing.T, seed uint64) (events []Event, outcomes []string) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Options{Seed: seed, Link: faultyLink, CallTimeout: 100 * time.Millisecond})
		defer n.Close()
		n.Handle("srv", func(_ context.Context, _ string, req []byte) ([]byte, error) { return req, nil })
		for i := range 50 {
			resp, err := n.Call(context.Background(), "cli", "srv", []byte{byte(i)})
			outcomes = append(outcomes, string(resp)+"|"+errString(err))
		}
		events = n.Events()
	})
	return events, outcomes
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Goal: a sequential workload is reproducible end to end, virtual timestamps
// included. Method: run the same Call sequence in two bubbles with one seed
// and once with another, and compare event logs and outcomes.
func TestSameSeedSameTrace(t *testing.T) {
	e1, o1 := callTrace(t, 11)
	e2, o2 := callTrace(t, 11)
	e3, _ := callTrace(t, 12)
	if !slices.Equal(e1, e2) || !slices.Equal(o1, o2) {
		t.Fatalf("same seed, different traces:\n%v\n%v", e1, e2)
	}
	if slices.Equal(e1, e3) {
		t.Fatal("different seeds gave identical traces")
	}
	var drops, dups int
	for _, e := range e1 {
		switch e.Kind {
		case EventDrop:
			drops++
		case EventDuplicate:
			dups++
		}
	}
	if drops == 0 || dups == 0 {
		t.Fatalf("trace exercised %d drops and %d duplicates, want both", drops, dups)
	}
}

// Goal: the event log is bounded and overflow is counted while the stream
// still sees everything. Method: record more events than EventCap.
func TestEventLogIsBounded(t *testing.T) {
	var streamed int
	n := NewNetwork(Options{EventCap: 3, OnEvent: func(Event) { streamed++ }})
	for range 5 {
		n.Isolate("a")
	}
	if got := len(n.Events()); got != 3 {
		t.Errorf("kept %d events, want 3", got)
	}
	if got := n.Stats().EventsOverflow; got != 2 {
		t.Errorf("overflow %d, want 2", got)
	}
	if streamed != 5 {
		t.Errorf("streamed %d events, want 5", streamed)
	}
}

// Goal: every message copy is accounted for. Method: run calls over a lossy,
// duplicating link and one to a missing endpoint, let everything land, and check
// Sent+Duplicated == Dropped+Delivered.
func TestStatsBalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Options{Seed: 5, Link: faultyLink, CallTimeout: 50 * time.Millisecond})
		defer n.Close()
		n.Handle("srv", func(context.Context, string, []byte) ([]byte, error) { return nil, nil })
		for range 100 {
			_, _ = n.Call(context.Background(), "cli", "srv", nil)
		}
		_, _ = n.Call(context.Background(), "cli", "nobody", nil)
		time.Sleep(time.Second)
		synctest.Wait()
		s := n.Stats()
		if s.Sent+s.Duplicated != s.Dropped+s.Delivered {
			t.Fatalf("unbalanced stats %+v", s)
		}
		if s.Dropped == 0 || s.Duplicated == 0 {
			t.Fatalf("faults not exercised: %+v", s)
		}
	})
}
