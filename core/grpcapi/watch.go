package grpcapi

import (
	"fmt"

	"github.com/lockstep/lockstep/core/api"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// watchKinds maps the API's event kinds onto the proto enum.
var watchKinds = map[string]lockstepv1.WatchEventKind{
	"grant":   lockstepv1.WatchEventKind_WATCH_EVENT_KIND_GRANT,
	"release": lockstepv1.WatchEventKind_WATCH_EVENT_KIND_RELEASE,
	"expire":  lockstepv1.WatchEventKind_WATCH_EVENT_KIND_EXPIRE,
	"enqueue": lockstepv1.WatchEventKind_WATCH_EVENT_KIND_ENQUEUE,
	"join":    lockstepv1.WatchEventKind_WATCH_EVENT_KIND_JOIN,
	"cancel":  lockstepv1.WatchEventKind_WATCH_EVENT_KIND_CANCEL,
	"grace":   lockstepv1.WatchEventKind_WATCH_EVENT_KIND_GRACE,
	"revive":  lockstepv1.WatchEventKind_WATCH_EVENT_KIND_REVIVE,
}

// Watch implements lockstepv1.LockServer with the service's operation
// (service.Watch), served from this member's applied log. Like the HTTP
// route it holds no in-flight token: each shard bounds its watchers.
func (s *Service) Watch(in *lockstepv1.WatchRequest, stream lockstepv1.Lock_WatchServer) error {
	req := api.WatchRequest{Resource: in.GetResource(), Prefix: in.GetPrefix()}
	if len(in.GetStartIndex()) > 0 {
		req.Start = make(map[int]uint64, len(in.GetStartIndex()))
		for sh, idx := range in.GetStartIndex() {
			req.Start[int(sh)] = idx
		}
	}
	err := s.svc.Watch(stream.Context(), req, func(m api.WatchMessage) error {
		if err := stream.Send(watchResponse(m)); err != nil {
			return fmt.Errorf("send watch message: %w", err)
		}
		return nil
	})
	if err != nil && stream.Context().Err() == nil {
		return toStatus(err)
	}
	// The caller left, or the member ends its watches (it is stopping):
	// a clean end, after which a watcher resumes elsewhere.
	return nil
}

func watchResponse(m api.WatchMessage) *lockstepv1.WatchResponse {
	r := &lockstepv1.WatchResponse{Shard: int32(m.Shard), Index: m.Index}
	if m.Start != nil {
		r.StartIndex = make(map[int32]uint64, len(m.Start))
		for sh, idx := range m.Start {
			r.StartIndex[int32(sh)] = idx
		}
	}
	for _, ev := range m.Events {
		r.Events = append(r.Events, &lockstepv1.WatchEvent{Kind: watchKinds[ev.Kind], Resource: ev.Resource,
			ClientId: ev.ClientID, LeaseFingerprint: ev.LeaseFingerprint, Mode: modeFromAPI(ev.Mode),
			FencingToken: ev.FencingToken, LogTimeMs: ev.LogTimeMs})
	}
	return r
}
