package scenarios

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/sim"
)

// TestSimulatorEntropyIsSeeded: goal — lockstep's own randomness in the
// simulator (lease ids, network decisions, workload think times, client
// jitter, fault targets) comes from the run's seed, in native and
// deterministic mode alike; only the Go runtime and hashicorp/raft's global
// math/rand are left to the wasm host. Method: read the simulator's
// packages and reject crypto/rand, the package-level functions of math/rand
// (whose generator is seeded at random), and seeds taken from the clock.
func TestSimulatorEntropyIsSeeded(t *testing.T) {
	// Constructors take an explicit seed or source; everything else at
	// package level draws from the global generator.
	constructors := []string{"New", "NewPCG", "NewChaCha8", "NewSource", "NewZipf"}
	for _, dir := range []string{".", "../sim", "../nemesis"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			randNames := map[string]bool{}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				name := filepath.Base(p)
				if imp.Name != nil {
					name = imp.Name.Name
				}
				switch p {
				case "crypto/rand":
					t.Errorf("%s imports crypto/rand: draw from the run's seed", path)
				case "math/rand", "math/rand/v2":
					if p == "math/rand/v2" && imp.Name == nil {
						name = "rand"
					}
					randNames[name] = true
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && randNames[x.Name] && !slices.Contains(constructors, sel.Sel.Name) {
					if _, isType := randTypes[sel.Sel.Name]; !isType {
						t.Errorf("%s: %s.%s draws from the global generator", fset.Position(sel.Pos()), x.Name, sel.Sel.Name)
					}
				}
				if sel.Sel.Name == "UnixNano" {
					t.Errorf("%s: UnixNano in the simulator: a seed taken from the clock is not replayable", fset.Position(sel.Pos()))
				}
				return true
			})
		}
	}
}

// randTypes are math/rand names that are types, not draws.
var randTypes = map[string]struct{}{"Rand": {}, "Source": {}, "PCG": {}, "ChaCha8": {}, "Zipf": {}}

// TestSameSeedSameDraws: goal — the seeded sources the simulator hands to
// the server and the workload give the same values for the same seed and
// other values for another. Method: build a cluster and a workload twice
// with one seed and once with another, in virtual time, and compare each
// member's first lease ids and each client's endpoint order and think-time
// draws.
func TestSameSeedSameDraws(t *testing.T) {
	s, err := ByName("leaderCrash")
	if err != nil {
		t.Fatal(err)
	}
	draw := func(seed uint64) []string {
		var out []string
		synctest.Test(t, func(t *testing.T) {
			net := sim.NewNetwork(sim.Options{Seed: seed, RPCTimeout: time.Second, CallTimeout: time.Second})
			defer net.Close()
			rec := newRecorder()
			c, err := newCluster(net, rec, clusterOptions{groups: 1, nodes: 3, seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Shutdown()
			for _, id := range c.order {
				for range 3 {
					var l lock.LeaseID = c.byID[id].leaseID()
					out = append(out, id+" lease "+l.String())
				}
			}
			wl, err := newWorkload(s.Workload, c, rec, seed)
			if err != nil {
				t.Fatal(err)
			}
			for _, cl := range wl.clients {
				out = append(out, cl.name+" "+strings.Join(wl.endpoints(cl, 0), ","))
				for range 3 {
					out = append(out, cl.name+" think "+between(cl.rng, [2]int64{0, 1000}).String())
				}
			}
		})
		return out
	}
	a, b, other := draw(7), draw(7), draw(8)
	if !slices.Equal(a, b) {
		t.Errorf("seed 7 drew differently twice:\n%v\n%v", a, b)
	}
	if slices.Equal(a, other) {
		t.Errorf("seeds 7 and 8 drew the same values: %v", a)
	}
	if len(a) < 9 {
		t.Fatalf("drew only %d values", len(a))
	}
}
