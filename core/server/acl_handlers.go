package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/meta"
	"github.com/lockstep/lockstep/core/node"
)

// routeACL adds the ACL administration endpoints. Changes go through the
// metadata group, so every member enforces them once it has applied them.
func (s *Server) routeACL() {
	s.route(api.PathACLToken, endpoint{method: http.MethodPost, op: "acl_token", limited: true, h: s.createToken})
	s.route(api.PathACLTokenDelete, endpoint{method: http.MethodPost, op: "acl_token_delete", limited: true, h: s.deleteToken})
	s.route(api.PathACLTokens, endpoint{method: http.MethodGet, op: "acl_tokens", limited: true, h: s.listTokens})
	s.route(api.PathACLQuota, endpoint{method: http.MethodPost, op: "acl_quota", limited: true, h: s.putQuota})
	s.route(api.PathACLQuotas, endpoint{method: http.MethodGet, op: "acl_quotas", limited: true, h: s.listQuotas})
	s.route(api.PathForceRelease, endpoint{method: http.MethodPost, op: "force_release", limited: true, h: s.forceRelease})
}

// errACLOff answers the ACL API while ACLs are off: there is no admin to
// check, so nothing may be changed through it.
var errACLOff = fmt.Errorf("%w: ACLs are off (start the members with --acl-bootstrap-token)", lock.ErrInvalid)

// admin checks that ACLs are on and the caller holds an admin token.
func (s *Server) admin(ctx context.Context) (*meta.Group, error) {
	m := s.host.Meta()
	if m == nil || m.ACL() == nil {
		return nil, errACLOff
	}
	return m, s.authorize(ctx, acl.RightAdmin)
}

// propose applies an ACL change through the metadata group. It returns
// once this member applied it, so the change holds here at once.
func (s *Server) propose(ctx context.Context, m *meta.Group, cmd meta.Command) error {
	ctx, cancel := s.deadline(ctx, 0)
	defer cancel()
	err := m.Propose(ctx, cmd)
	switch {
	case errors.Is(err, acl.ErrNotFound), errors.Is(err, acl.ErrFailedPrecondition), errors.Is(err, acl.ErrInvalid):
		return err // the policy's own sentence and kind (authCode)
	case meta.Refused(err):
		return fmt.Errorf("%w: %w", lock.ErrInvalid, err)
	}
	return err
}

func (s *Server) createToken(req *request) (any, error) {
	m, err := s.admin(req.r.Context())
	if err != nil {
		return nil, err
	}
	var in api.Token
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	if in.Secret == "" {
		in.Secret = acl.NewSecret()
	}
	rights := make([]acl.Right, len(in.Rights))
	for i, r := range in.Rights {
		rights[i] = acl.Right(r)
	}
	t, err := acl.NewToken(in.Secret, in.Name, in.Namespaces, rights)
	if err != nil {
		return nil, err
	}
	if err := s.propose(req.r.Context(), m, meta.Command{Op: meta.OpACLPutToken, ACLCommand: meta.ACLCommand{Token: &t}}); err != nil {
		return nil, err
	}
	out := tokenView(t)
	out.Secret = in.Secret
	return out, nil
}

func (s *Server) deleteToken(req *request) (any, error) {
	m, err := s.admin(req.r.Context())
	if err != nil {
		return nil, err
	}
	var in api.TokenDelete
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	if in.ID == "" {
		return nil, fmt.Errorf("%w: id is required", lock.ErrInvalid)
	}
	if err := s.propose(req.r.Context(), m, meta.Command{Op: meta.OpACLDeleteToken, ACLCommand: meta.ACLCommand{TokenID: in.ID}}); err != nil {
		return nil, err
	}
	return in, nil
}

func (s *Server) listTokens(req *request) (any, error) {
	m, err := s.admin(req.r.Context())
	if err != nil {
		return nil, err
	}
	out := api.TokenList{Tokens: []api.Token{}}
	for _, t := range m.ACL().Tokens {
		out.Tokens = append(out.Tokens, tokenView(t))
	}
	return out, nil
}

func tokenView(t acl.Token) api.Token {
	out := api.Token{ID: t.ID, Name: t.Name, Namespaces: t.Namespaces, Rights: make([]string, len(t.Rights))}
	for i, r := range t.Rights {
		out.Rights[i] = string(r)
	}
	return out
}

func (s *Server) putQuota(req *request) (any, error) {
	m, err := s.admin(req.r.Context())
	if err != nil {
		return nil, err
	}
	var in api.Quota
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	q := acl.Quota(in)
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if err := s.propose(req.r.Context(), m, meta.Command{Op: meta.OpACLPutQuota, ACLCommand: meta.ACLCommand{Quota: &q}}); err != nil {
		return nil, err
	}
	return in, nil
}

func (s *Server) listQuotas(req *request) (any, error) {
	m, err := s.admin(req.r.Context())
	if err != nil {
		return nil, err
	}
	out := api.QuotaList{Quotas: []api.Quota{}}
	for _, q := range m.ACL().Quotas {
		out.Quotas = append(out.Quotas, api.Quota(q))
	}
	return out, nil
}

// forceRelease releases every holder of a resource by lease id, read
// through the log first. A holder that changes meanwhile keeps its lease:
// releasing an id that is no longer held changes nothing.
func (s *Server) forceRelease(req *request) (any, error) {
	ctx := req.r.Context()
	if s.policy() == nil {
		return nil, errACLOff
	}
	var in api.ForceReleaseRequest
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	if err := s.authorize(ctx, acl.RightReleaseAny, in.Resource); err != nil {
		return nil, err
	}
	if in.Resource == "" {
		return nil, fmt.Errorf("%w: resource is required", lock.ErrInvalid)
	}
	ctx, cancel := s.deadline(ctx, 0)
	defer cancel()
	n, _, err := s.host.For(in.Resource)
	if err != nil {
		return nil, err
	}
	res, err := n.Status(ctx, in.Resource)
	if err != nil {
		return nil, err
	}
	out := api.ForceReleaseResponse{}
	for _, h := range res.Status.Holders {
		_, err := n.Release(ctx, in.Resource, h.ID)
		switch {
		case err == nil:
			out.Released++
		case !errors.Is(err, node.ErrNotHolder):
			return nil, err
		}
	}
	return out, nil
}
