//go:build !lockstep_bugs

package service

import "github.com/lockstep/lockstep/core/node"

// staleValidate is always false here: a production build has no bug modes.
func (s *Service) staleValidate(*node.Node) bool { return false }
