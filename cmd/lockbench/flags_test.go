package main

import (
	"slices"
	"testing"
)

// TestDefaultTargetIsLockstep: goal — lockbench with no -target measures
// lockstep itself, not the bare-HTTP baseline. Method: parse an empty
// command line and read the targets.
func TestDefaultTargetIsLockstep(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.targets, []string{"lockstep"}) {
		t.Fatalf("default targets = %v, want [lockstep]", c.targets)
	}
}
