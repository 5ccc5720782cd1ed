//go:build !lockstep_bugs

package node_test

import (
	"errors"
	"testing"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// TestProductionBuildRefusesBugModes: goal — a build without the
// lockstep_bugs tag cannot switch a bug mode on, and says how to get one
// that can. Method: start a node with each bug mode name, and a lock state
// machine with a bug flag.
func TestProductionBuildRefusesBugModes(t *testing.T) {
	if len(node.Bugs) != 0 {
		t.Fatalf("a production build lists bug modes %v", node.Bugs)
	}
	for _, bug := range []node.Bug{node.BugFollowerGrant, node.BugLocalRenew, node.BugOrphanWaiters} {
		_, err := node.New(node.Config{ID: "n1", Hooks: &node.Hooks{Bug: bug}})
		if !errors.Is(err, node.ErrNoBugModes) {
			t.Errorf("bug %s: err %v, want ErrNoBugModes", bug, err)
		}
	}
	cfg := lock.DefaultConfig()
	cfg.Bugs.TokenInMemory = true
	if _, err := lock.New(cfg); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("lock state machine with a bug flag: %v, want ErrInvalid", err)
	}
}
