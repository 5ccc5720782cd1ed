package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/service"
)

// watch serves GET /lock/watch (service.Watch) as JSON lines, flushed one
// by one. An error before the stream starts is an ordinary error reply
// (compacted is 410); one after it is the stream's last line.
func (s *Server) watch(w http.ResponseWriter, r *http.Request) {
	if err := precheck(w, r, api.PathWatch, http.MethodGet, []string{"resource", "prefix", "start"}); err != nil {
		writeAPIError(w, classify(err))
		return
	}
	in, err := watchQuery(r)
	if err != nil {
		writeAPIError(w, classify(err))
		return
	}
	if r.Method == http.MethodHead {
		return // a stream has no length to tell
	}
	rc := http.NewResponseController(w)
	// The stream lasts as long as the client stays.
	_ = rc.SetWriteDeadline(time.Time{})
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	started := false
	err = s.svc.Watch(r.Context(), in, func(m api.WatchMessage) error {
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		}
		if err := enc.Encode(m); err != nil {
			return fmt.Errorf("write watch message: %w", err)
		}
		return rc.Flush()
	})
	switch {
	case err == nil || r.Context().Err() != nil:
	case !started:
		writeAPIError(w, classify(err))
	default:
		ae := classify(err)
		_ = enc.Encode(api.WatchMessage{Error: &ae})
	}
}

// watchQuery reads resource, prefix and start (SHARD:INDEX,...).
func watchQuery(r *http.Request) (api.WatchRequest, error) {
	q := r.URL.Query()
	prefix, err := queryBool(q, "prefix")
	if err != nil {
		return api.WatchRequest{}, err
	}
	in := api.WatchRequest{Resource: q.Get("resource"), Prefix: prefix}
	if v := q.Get("start"); v != "" {
		if in.Start, err = api.ParseWatchStart(v); err != nil {
			return api.WatchRequest{}, fmt.Errorf("%w: %w", service.ErrInvalid, err)
		}
	}
	return in, nil
}
