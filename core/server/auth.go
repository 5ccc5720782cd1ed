package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/node"
)

// tokenKey carries the bearer token of a request in its context.
type tokenKey struct{}

// WithToken returns ctx carrying the caller's bearer token secret: HTTP
// routes take it from the Authorization header, gRPC from the
// "authorization" metadata, and the operations check it (authorize).
func WithToken(ctx context.Context, secret string) context.Context {
	return context.WithValue(ctx, tokenKey{}, secret)
}

func tokenFrom(ctx context.Context) string {
	s, _ := ctx.Value(tokenKey{}).(string)
	return s
}

// BearerToken reads "Bearer <token>" from an Authorization value; any
// other form is no token (and so 401 while ACLs are on).
func BearerToken(authorization string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// withBearer puts the request's bearer token in its context.
func withBearer(r *http.Request) *http.Request {
	if h := r.Header.Get("Authorization"); h != "" {
		return r.WithContext(WithToken(r.Context(), BearerToken(h)))
	}
	return r
}

// policy is the ACL policy this member has applied; nil (ACLs off) on a
// host without a metadata group or before a bootstrap.
func (s *Server) policy() *acl.Policy {
	if m := s.host.Meta(); m != nil {
		return m.ACL()
	}
	return nil
}

// authorize checks the caller's token for right on every resource. It is
// checked here, at the member the client reached: what it forwards to a
// shard's leader has passed already.
func (s *Server) authorize(ctx context.Context, right acl.Right, resources ...string) error {
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
func (s *Server) authorizeEvery(ctx context.Context, right acl.Right) error {
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
func (s *Server) policyCurrent() error {
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

// authCode maps ACL refusals to their API codes.
func authCode(err error) (api.Code, bool) {
	switch {
	case errors.Is(err, acl.ErrUnauthenticated):
		return api.CodeUnauthenticated, true
	case errors.Is(err, acl.ErrPermissionDenied):
		return api.CodePermissionDenied, true
	case errors.Is(err, acl.ErrInvalid):
		return api.CodeInvalidArgument, true
	case errors.Is(err, acl.ErrNotFound):
		return api.CodeNotFound, true
	case errors.Is(err, acl.ErrFailedPrecondition):
		return api.CodeFailedPrecondition, true
	}
	return "", false
}

// Authorize checks the token in ctx (WithToken) for right on every
// resource: front ends with calls of their own (a gRPC watch) use it.
func (s *Server) Authorize(ctx context.Context, right acl.Right, resources ...string) error {
	return s.authorize(ctx, right, resources...)
}
