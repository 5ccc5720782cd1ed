package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/meta"
	"github.com/lockstep/lockstep/core/node"
)

// The ACL administration operations. Changes go through the metadata
// group, and each returns once this member applied its change, so it
// holds here at once; every other member enforces it once it has applied
// it too.

// errACLOff answers the ACL API while ACLs are off: there is no admin to
// check, so nothing may be changed through it.
var errACLOff = fmt.Errorf("%w: ACLs are off (start the members with --acl-bootstrap-token)", lock.ErrInvalid)

// CheckACL refuses while ACLs are off. A front end that decodes a request
// body calls it (or CheckAdmin) first, so a caller learns nothing about
// its body's faults before it may call the operation at all; the
// operations check again themselves.
func (s *Service) CheckACL() error {
	if s.policy() == nil {
		return errACLOff
	}
	return nil
}

// CheckAdmin refuses unless ACLs are on and the caller (WithToken) holds
// an admin token; see CheckACL.
func (s *Service) CheckAdmin(ctx context.Context) error {
	_, err := s.admin(ctx)
	return err
}

// admin checks that ACLs are on and the caller holds an admin token.
func (s *Service) admin(ctx context.Context) (*meta.Group, error) {
	m := s.host.Meta()
	if m == nil || m.ACL() == nil {
		return nil, errACLOff
	}
	return m, s.authorize(ctx, acl.RightAdmin)
}

// propose applies an ACL change through the metadata group. It returns
// once this member applied it, so the change holds here at once.
func (s *Service) propose(ctx context.Context, m *meta.Group, cmd meta.Command) error {
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

// CreateToken creates (or replaces) a token (POST /acl/token) and answers
// it with its secret, drawn when in names none: the one time it is shown.
func (s *Service) CreateToken(ctx context.Context, in api.Token) (api.Token, error) {
	m, err := s.admin(ctx)
	if err != nil {
		return api.Token{}, err
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
		return api.Token{}, err
	}
	if err := s.propose(ctx, m, meta.Command{Op: meta.OpACLPutToken, ACLCommand: meta.ACLCommand{Token: &t}}); err != nil {
		return api.Token{}, err
	}
	out := tokenView(t)
	out.Secret = in.Secret
	return out, nil
}

// DeleteToken deletes a token (POST /acl/token/delete): not_found when no
// token has the id, failed_precondition for the last admin token.
func (s *Service) DeleteToken(ctx context.Context, in api.TokenDelete) (api.TokenDelete, error) {
	m, err := s.admin(ctx)
	if err != nil {
		return api.TokenDelete{}, err
	}
	if in.ID == "" {
		return api.TokenDelete{}, fmt.Errorf("%w: id is required", lock.ErrInvalid)
	}
	if err := s.propose(ctx, m, meta.Command{Op: meta.OpACLDeleteToken, ACLCommand: meta.ACLCommand{TokenID: in.ID}}); err != nil {
		return api.TokenDelete{}, err
	}
	return in, nil
}

// Tokens lists the tokens, never their secrets (GET /acl/tokens).
func (s *Service) Tokens(ctx context.Context) (api.TokenList, error) {
	m, err := s.admin(ctx)
	if err != nil {
		return api.TokenList{}, err
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

// PutQuota sets a namespace's quota; all limits zero removes it (POST
// /acl/quota).
func (s *Service) PutQuota(ctx context.Context, in api.Quota) (api.Quota, error) {
	m, err := s.admin(ctx)
	if err != nil {
		return api.Quota{}, err
	}
	q := acl.Quota(in)
	if err := q.Validate(); err != nil {
		return api.Quota{}, err
	}
	if err := s.propose(ctx, m, meta.Command{Op: meta.OpACLPutQuota, ACLCommand: meta.ACLCommand{Quota: &q}}); err != nil {
		return api.Quota{}, err
	}
	return in, nil
}

// Quotas lists the namespaces' quotas (GET /acl/quotas).
func (s *Service) Quotas(ctx context.Context) (api.QuotaList, error) {
	m, err := s.admin(ctx)
	if err != nil {
		return api.QuotaList{}, err
	}
	out := api.QuotaList{Quotas: []api.Quota{}}
	for _, q := range m.ACL().Quotas {
		out.Quotas = append(out.Quotas, api.Quota(q))
	}
	return out, nil
}

// ForceRelease releases every holder of a resource by lease id, read
// through the log first (POST /acl/force_release; the release_any right).
// A holder that changes meanwhile keeps its lease: releasing an id that
// is no longer held changes nothing.
func (s *Service) ForceRelease(ctx context.Context, in api.ForceReleaseRequest) (api.ForceReleaseResponse, error) {
	if err := s.CheckACL(); err != nil {
		return api.ForceReleaseResponse{}, err
	}
	if err := s.authorize(ctx, acl.RightReleaseAny, in.Resource); err != nil {
		return api.ForceReleaseResponse{}, err
	}
	if in.Resource == "" {
		return api.ForceReleaseResponse{}, fmt.Errorf("%w: resource is required", lock.ErrInvalid)
	}
	ctx, cancel := s.deadline(ctx, 0)
	defer cancel()
	n, _, err := s.host.For(in.Resource)
	if err != nil {
		return api.ForceReleaseResponse{}, err
	}
	res, err := n.Status(ctx, in.Resource)
	if err != nil {
		return api.ForceReleaseResponse{}, err
	}
	out := api.ForceReleaseResponse{}
	for _, h := range res.Status.Holders {
		_, err := n.Release(ctx, in.Resource, h.ID)
		switch {
		case err == nil:
			out.Released++
		case !errors.Is(err, node.ErrNotHolder):
			return api.ForceReleaseResponse{}, err
		}
	}
	return out, nil
}
