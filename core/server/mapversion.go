package server

import (
	"net/http"

	"github.com/lockstep/lockstep/core/api"
)

// stampMapVersion tells the caller which shard map this member routes by,
// read as the reply is written: a gateway or client holding an older map
// (a member published a new address) refreshes it at once. A member
// without a metadata group (a single-group test host) has no map to tell.
func (s *Server) stampMapVersion(w http.ResponseWriter) {
	if v := s.svc.MapVersion(); v > 0 {
		api.SetMapVersion(w.Header(), v)
	}
}
