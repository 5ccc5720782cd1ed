package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestBalanced: goal — with the default shard counts, 100k random resource
// names spread evenly: the fullest shard holds at most 1.1x the mean.
// Method: count placements for 1..8 shards and compare max with mean.
func TestBalanced(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := make([]string, 100_000)
	for i := range names {
		names[i] = fmt.Sprintf("res-%x-%d", rng.Uint64(), i)
	}
	for shards := 1; shards <= 8; shards++ {
		counts := make([]int, shards+1)
		for _, n := range names {
			s := Of(n, shards)
			if s < 1 || int(s) > shards {
				t.Fatalf("%q placed on shard %d of %d", n, s, shards)
			}
			counts[s]++
		}
		mean := float64(len(names)) / float64(shards)
		worst := 0
		for _, c := range counts[1:] {
			worst = max(worst, c)
		}
		if ratio := float64(worst) / mean; ratio > 1.1 {
			t.Errorf("%d shards: max/mean %.3f > 1.1 (%v)", shards, ratio, counts[1:])
		}
	}
}

// TestHashTags: goal — names sharing a hash tag share a shard, and only the
// first non-empty {...} counts. Method: tagged names across many shard
// counts, plus the edge cases of the tag syntax.
func TestHashTags(t *testing.T) {
	for _, tc := range []struct{ name, key string }{
		{"orders:{42}:row7", "42"},
		{"{user1}.following", "user1"},
		{"foo{}{bar}", "foo{}{bar}"}, // an empty first tag tags nothing
		{"foo{{bar}}", "{bar"},
		{"foo{bar", "foo{bar"},
		{"plain", "plain"},
	} {
		if got := Key(tc.name); got != tc.key {
			t.Errorf("Key(%q) = %q, want %q", tc.name, got, tc.key)
		}
	}
	for shards := 2; shards <= 16; shards++ {
		if a, b := Of("orders:{42}:row7", shards), Of("orders:{42}:row8", shards); a != b {
			t.Errorf("%d shards: tagged names on %d and %d", shards, a, b)
		}
	}
}

// TestStableAndMinimalMoves: goal — placement is fixed (every process must
// agree, across versions) and growing from n to n+1 shards moves only
// about 1/(n+1) of the names, all of them onto the new shard. Method:
// pinned placements, then a move count from 4 to 5 shards.
func TestStableAndMinimalMoves(t *testing.T) {
	// Changing these breaks every existing cluster: its locks would move.
	for _, p := range []struct {
		name   string
		shards int
		shard  Shard
	}{
		{"file_123", 3, 3}, {"file_123", 8, 6}, {"user:42", 3, 3}, {"user:42", 8, 7},
		{"orders:{42}:row7", 3, 2}, {"orders:{42}:row7", 8, 6}, {"a", 3, 2},
	} {
		if got := Of(p.name, p.shards); got != p.shard {
			t.Errorf("Of(%q, %d) = %d, pinned %d", p.name, p.shards, got, p.shard)
		}
	}
	moved := 0
	for i := range 20_000 {
		name := fmt.Sprintf("r%d", i)
		from, to := Of(name, 4), Of(name, 5)
		if from != to {
			moved++
			if to != 5 {
				t.Fatalf("%q moved from %d to old shard %d", name, from, to)
			}
		}
	}
	if frac := float64(moved) / 20_000; frac < 0.17 || frac > 0.23 {
		t.Errorf("growing 4 -> 5 shards moved %.3f of names, want about 0.2", frac)
	}
}
