package server

import (
	"net/http"

	"github.com/lockstep/lockstep/core/service"
)

// withBearer puts the request's bearer token (Authorization: Bearer ...)
// in its context, where the service's operations check it.
func withBearer(r *http.Request) *http.Request {
	if h := r.Header.Get("Authorization"); h != "" {
		return r.WithContext(service.WithToken(r.Context(), service.BearerToken(h)))
	}
	return r
}
