package nemesis

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// links is the network a Cut leaves: which pairs can still talk.
type links struct {
	nodes []string
	cut   map[[2]string]bool
}

func newLinks(t *testing.T, nodes []string, pairs [][2]string) links {
	t.Helper()
	l := links{nodes: nodes, cut: map[[2]string]bool{}}
	for _, p := range pairs {
		if p[0] == p[1] || !slices.Contains(nodes, p[0]) || !slices.Contains(nodes, p[1]) {
			t.Fatalf("bad pair %v for nodes %v", p, nodes)
		}
		if l.cut[p] || l.cut[[2]string{p[1], p[0]}] {
			t.Fatalf("pair %v cut twice", p)
		}
		l.cut[p] = true
	}
	return l
}

func (l links) talk(a, b string) bool {
	return !l.cut[[2]string{a, b}] && !l.cut[[2]string{b, a}]
}

func (l links) degree(a string, among []string) int {
	n := 0
	for _, b := range among {
		if b != a && l.talk(a, b) {
			n++
		}
	}
	return n
}

// groups returns the connected components of among (sorted by size, then
// first member) and whether each one is fully connected inside.
func (l links) groups(among []string) ([][]string, bool) {
	seen := map[string]bool{}
	var out [][]string
	cliques := true
	for _, start := range among {
		if seen[start] {
			continue
		}
		group, todo := []string{}, []string{start}
		seen[start] = true
		for len(todo) > 0 {
			a := todo[0]
			todo = todo[1:]
			group = append(group, a)
			for _, b := range among {
				if !seen[b] && l.talk(a, b) {
					seen[b] = true
					todo = append(todo, b)
				}
			}
		}
		for _, a := range group {
			if l.degree(a, group) != len(group)-1 {
				cliques = false
			}
		}
		slices.Sort(group)
		out = append(out, group)
	}
	slices.SortFunc(out, func(a, b []string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return slices.Compare(a, b)
	})
	return out, cliques
}

func sizes(gs [][]string) []int {
	var out []int
	for _, g := range gs {
		out = append(out, len(g))
	}
	return out
}

// Goal: each partition nemesis cuts the shape it promises and heals with
// Cut(nil) after d. Method: for 2..7 nodes (leader n2) and 20 seeds,
// rebuild the surviving network from the single Cut call and check its
// components and degrees.
func TestPartitionShapes(t *testing.T) {
	const d = 2 * time.Second
	tests := []struct {
		name  string
		shape func(l links, leader string) error
	}{
		{"partitionRandomHalves", func(l links, _ string) error {
			gs, cliques := l.groups(l.nodes)
			n := len(l.nodes)
			if !cliques || !slices.Equal(sizes(gs), []int{n / 2, n - n/2}) {
				return fmt.Errorf("groups %v, want two cliques of %d and %d", gs, n/2, n-n/2)
			}
			return nil
		}},
		{"isolateLeader", func(l links, leader string) error {
			gs, cliques := l.groups(l.nodes)
			if !cliques || len(gs) != 2 || l.degree(leader, l.nodes) != 0 {
				return fmt.Errorf("groups %v, want the leader %s alone and the rest together", gs, leader)
			}
			return nil
		}},
		{"isolateSingle", func(l links, _ string) error {
			gs, cliques := l.groups(l.nodes)
			if !cliques || !slices.Equal(sizes(gs), []int{1, len(l.nodes) - 1}) {
				return fmt.Errorf("groups %v, want one node alone and the rest together", gs)
			}
			return nil
		}},
		{"partitionMajorityMinority", func(l links, leader string) error {
			gs, cliques := l.groups(l.nodes)
			n := len(l.nodes)
			if !cliques || !slices.Equal(sizes(gs), []int{(n - 1) / 2, n - (n-1)/2}) || !slices.Contains(gs[0], leader) {
				return fmt.Errorf("groups %v, want cliques of %d (with leader %s) and %d", gs, (n-1)/2, leader, n-(n-1)/2)
			}
			return nil
		}},
		{"partitionBridge", func(l links, _ string) error {
			for _, b := range l.nodes {
				if l.degree(b, l.nodes) != len(l.nodes)-1 {
					continue
				}
				rest := slices.DeleteFunc(slices.Clone(l.nodes), func(x string) bool { return x == b })
				gs, cliques := l.groups(rest)
				if cliques && len(gs) == 2 && len(gs[1])-len(gs[0]) <= 1 {
					return nil
				}
			}
			return fmt.Errorf("no bridge talking to two cut-off, balanced sides in %v", l.cut)
		}},
		{"partitionRing", func(l links, _ string) error {
			for _, a := range l.nodes {
				if deg := l.degree(a, l.nodes); deg != 2 {
					return fmt.Errorf("%s talks to %d nodes, want its 2 ring neighbours", a, deg)
				}
			}
			if gs, _ := l.groups(l.nodes); len(gs) != 1 {
				return fmt.Errorf("ring falls apart into %v", gs)
			}
			return nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nem := mustByName(t, tc.name)
			for n := 2; n <= 7; n++ {
				for seed := range uint64(20) {
					synctest.Test(t, func(t *testing.T) {
						f, rec := newFake(n, "n2"), &fakeRecorder{}
						if !nem.Available(f) {
							return
						}
						if err := nem.Inject(t.Context(), f, seeded(seed), d, rec); err != nil {
							t.Fatalf("n=%d seed %d: %v", n, seed, err)
						}
						calls := f.callLog()
						if len(calls) != 2 || calls[0].op != "Cut" || calls[0].at != 0 ||
							calls[1].op != "Cut" || calls[1].arg.([][2]string) != nil || calls[1].at != d {
							t.Fatalf("n=%d seed %d: calls %+v, want Cut(pairs) at 0 and Cut(nil) at %s", n, seed, calls, d)
						}
						if err := tc.shape(newLinks(t, f.nodes, calls[0].arg.([][2]string)), "n2"); err != nil {
							t.Errorf("n=%d seed %d: %v", n, seed, err)
						}
						if ws := rec.all(); len(ws) != 1 || ws[0].target == "" {
							t.Errorf("n=%d seed %d: windows %+v, want one with a target", n, seed, ws)
						}
					})
				}
			}
		})
	}
}

// Goal: partitionBridge on 3 nodes cuts exactly one link, as promised.
// Method: inject and count the cut pairs.
func TestPartitionBridgeThreeNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(3, "n1")
		if err := mustByName(t, "partitionBridge").Inject(t.Context(), f, seeded(5), time.Second, &fakeRecorder{}); err != nil {
			t.Fatal(err)
		}
		if pairs := f.callLog()[0].arg.([][2]string); len(pairs) != 1 {
			t.Errorf("cut %v, want exactly one link", pairs)
		}
	})
}
