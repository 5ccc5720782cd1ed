//go:build !lockstep_bugs

package node

import (
	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/lock"
)

// Bugs is empty: a production build has no bug modes.
var Bugs []Bug

// bug is always false here, so the compiler drops every bug path.
func (n *Node) bug(Bug) bool { return false }

// BugOn is always false here.
func (n *Node) BugOn(Bug) bool { return false }

func (n *Node) followerGrant(lock.Command) (lock.Result, bool) { return lock.Result{}, false }

func (n *Node) localRenew(lock.Command) (lock.Result, bool, error) { return lock.Result{}, false, nil }

func (n *Node) bugFSM(f *fsm) raft.BatchingFSM { return f }

func (Bug) lockBugs() lock.Bugs { return lock.Bugs{} }
