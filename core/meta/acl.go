package meta

import (
	"errors"
	"fmt"

	"github.com/lockstep/lockstep/core/acl"
)

// ACL commands change State.ACL (see core/acl). They carry token hashes,
// never secrets, so neither the log nor snapshots hold a usable token.
const (
	// OpACLBootstrap turns ACLs on with Token as the first admin (a no-op
	// when that token is there already).
	OpACLBootstrap Op = "acl-bootstrap"
	// OpACLPutToken adds or replaces Token.
	OpACLPutToken Op = "acl-put-token"
	// OpACLDeleteToken removes the token TokenID.
	OpACLDeleteToken Op = "acl-delete-token"
	// OpACLPutQuota sets (or with no limits clears) Quota.
	OpACLPutQuota Op = "acl-put-quota"
)

// ACLCommand is the part of a Command the ACL ops use.
type ACLCommand struct {
	Token   *acl.Token `json:"token,omitempty"`
	TokenID string     `json:"token_id,omitempty"`
	Quota   *acl.Quota `json:"quota,omitempty"`
}

func (s *State) applyACL(cmd Command) error {
	var next *acl.Policy
	var err error
	switch {
	case cmd.Op == OpACLBootstrap && cmd.Token != nil:
		next, err = s.ACL.Bootstrap(*cmd.Token)
	case cmd.Op == OpACLPutToken && cmd.Token != nil:
		next, err = s.ACL.PutToken(*cmd.Token)
	case cmd.Op == OpACLDeleteToken:
		next, err = s.ACL.DeleteToken(cmd.TokenID)
	case cmd.Op == OpACLPutQuota && cmd.Quota != nil:
		next, err = s.ACL.PutQuota(*cmd.Quota)
	default:
		return fmt.Errorf("meta: unknown op %q (or its argument is missing)", cmd.Op)
	}
	if err != nil {
		// The policy's own sentence: it reaches the admin as it is.
		return err
	}
	if next != s.ACL {
		s.ACL = next
		s.Version++
	}
	return nil
}

// ACL returns the policy this replica has applied (nil: ACLs are off).
// The policy is never edited, so the caller may keep it.
func (g *Group) ACL() *acl.Policy {
	g.fsm.mu.Lock()
	defer g.fsm.mu.Unlock()
	return g.fsm.st.ACL
}

// Refused reports whether err is a command the state refused (an ACL
// change that makes no sense, a token that is not there): retrying
// cannot help. errors.Is tells the ACL kinds apart (acl.ErrNotFound,
// acl.ErrFailedPrecondition, acl.ErrInvalid).
func Refused(err error) bool { return errors.Is(err, errInvalid) }
