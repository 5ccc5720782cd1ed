//go:build lockstep_bugs

package service

import "github.com/lockstep/lockstep/core/node"

// staleValidate is node.BugStaleValidate: validate answers from n's
// applied state while claiming to have read through the log.
func (s *Service) staleValidate(n *node.Node) bool { return n.BugOn(node.BugStaleValidate) }
