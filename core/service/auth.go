package service

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/node"
)

// tokenKey carries the bearer token of a request in its context.
type tokenKey struct{}

// WithToken returns ctx carrying the caller's bearer token secret: the
// HTTP front end takes it from the Authorization header, gRPC from the
// "authorization" metadata, and the operations check it (authorize).
func WithToken(ctx context.Context, secret string) context.Context {
	return context.WithValue(ctx, tokenKey{}, secret)
}

func tokenFrom(ctx context.Context) string {
	s, _ := ctx.Value(tokenKey{}).(string)
	return s
}

// BearerToken reads "Bearer <token>" from an authorization value (HTTP
// header or gRPC metadata alike); any other form is no token (and so 401
// while ACLs are on).
func BearerToken(authorization string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// policy is the ACL policy this member has applied; nil (ACLs off) on a
// host without a metadata group or before a bootstrap.
func (s *Service) policy() *acl.Policy {
	if m := s.host.Meta(); m != nil {
		return m.ACL()
	}
	return nil
}

// authorize checks the caller's token for right on every resource. It is
// checked here, at the member the client reached: what it forwards to a
// shard's leader has passed already.
func (s *Service) authorize(ctx context.Context, right acl.Right, resources ...string) error {
	p := s.policy()
	if p == nil {
		return nil
	}
	if err := s.policyCurrent(); err != nil {
		return err
	}
	return p.Authorize(tokenFrom(ctx), right, resources...)
}

// authorizeEvery is authorize for a request no namespace bounds.
func (s *Service) authorizeEvery(ctx context.Context, right acl.Right) error {
	p := s.policy()
	if p == nil {
		return nil
	}
	if err := s.policyCurrent(); err != nil {
		return err
	}
	return p.AuthorizeEvery(tokenFrom(ctx), right)
}

// policyCurrent refuses token checks on a member whose metadata replica
// has not heard from the group's leader within ReadyLeaderContact: it
// cannot tell whether a token was deleted meanwhile, so trusting its
// policy would let a deleted token work for as long as it is cut off.
// This bounds how long a deleted token works anywhere (README, ACLs).
func (s *Service) policyCurrent() error {
	m := s.host.Meta()
	if m == nil {
		return nil
	}
	since, ok := m.LeaderContact()
	switch {
	case !ok:
		return fmt.Errorf("%w: this member has not heard from the metadata group's leader since it started, so it cannot tell "+
			"whether a token was deleted: it checks no token until it does (retry on another member)", node.ErrUnavailable)
	case since > s.cfg.ReadyLeaderContact:
		return fmt.Errorf("%w: this member has not heard from the metadata group's leader for %s (more than %s), so it cannot tell "+
			"whether a token was deleted meanwhile: it checks no token until it does (retry on another member)",
			node.ErrUnavailable, since.Round(time.Millisecond), s.cfg.ReadyLeaderContact)
	}
	return nil
}
