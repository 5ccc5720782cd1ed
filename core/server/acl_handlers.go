package server

import (
	"net/http"

	"github.com/lockstep/lockstep/core/api"
)

// routeACL adds the ACL administration endpoints (the service's ACL
// operations).
func (s *Server) routeACL() {
	s.route(api.PathACLToken, endpoint{method: http.MethodPost, op: "acl_token", limited: true, h: s.createToken})
	s.route(api.PathACLTokenDelete, endpoint{method: http.MethodPost, op: "acl_token_delete", limited: true, h: s.deleteToken})
	s.route(api.PathACLTokens, endpoint{method: http.MethodGet, op: "acl_tokens", limited: true, h: s.listTokens})
	s.route(api.PathACLQuota, endpoint{method: http.MethodPost, op: "acl_quota", limited: true, h: s.putQuota})
	s.route(api.PathACLQuotas, endpoint{method: http.MethodGet, op: "acl_quotas", limited: true, h: s.listQuotas})
	s.route(api.PathForceRelease, endpoint{method: http.MethodPost, op: "force_release", limited: true, h: s.forceRelease})
}

// The handlers with a body check the caller (service.CheckAdmin,
// CheckACL) before decoding it: a caller without the right learns nothing
// about its body's faults.

func (s *Server) createToken(req *request) (any, error) {
	if err := s.svc.CheckAdmin(req.r.Context()); err != nil {
		return nil, err
	}
	var in api.Token
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	return s.svc.CreateToken(req.r.Context(), in)
}

func (s *Server) deleteToken(req *request) (any, error) {
	if err := s.svc.CheckAdmin(req.r.Context()); err != nil {
		return nil, err
	}
	var in api.TokenDelete
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	return s.svc.DeleteToken(req.r.Context(), in)
}

func (s *Server) listTokens(req *request) (any, error) {
	return s.svc.Tokens(req.r.Context())
}

func (s *Server) putQuota(req *request) (any, error) {
	if err := s.svc.CheckAdmin(req.r.Context()); err != nil {
		return nil, err
	}
	var in api.Quota
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	return s.svc.PutQuota(req.r.Context(), in)
}

func (s *Server) listQuotas(req *request) (any, error) {
	return s.svc.Quotas(req.r.Context())
}

func (s *Server) forceRelease(req *request) (any, error) {
	if err := s.svc.CheckACL(); err != nil {
		return nil, err
	}
	var in api.ForceReleaseRequest
	if err := decode(req.body, &in); err != nil {
		return nil, err
	}
	return s.svc.ForceRelease(req.r.Context(), in)
}
