package grpcapi

import (
	"fmt"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/service"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// The conversions between the proto messages and the core/api types that
// core/service's operations take. Unspecified enums become "", the HTTP
// default; values no release knows are refused here, as HTTP refuses an
// unknown mode string.

func acquireRequest(in *lockstepv1.AcquireRequest) (api.AcquireRequest, error) {
	mode, err := modeToAPI(in.GetMode())
	if err != nil {
		return api.AcquireRequest{}, err
	}
	var policy api.Policy
	switch p := in.GetPolicy(); p {
	case lockstepv1.Policy_POLICY_UNSPECIFIED:
	case lockstepv1.Policy_POLICY_FIFO:
		policy = api.FIFO
	case lockstepv1.Policy_POLICY_THROUGHPUT:
		policy = api.Throughput
	default:
		return api.AcquireRequest{}, fmt.Errorf("%w: unknown policy %d", service.ErrInvalid, p)
	}
	return api.AcquireRequest{
		Resource: in.GetResource(), ClientID: in.GetClientId(), TTLMs: in.GetTtlMs(), Mode: mode,
		WaitMs: in.GetWaitMs(), RequestID: in.GetRequestId(), Policy: policy, Permits: in.GetPermits(), GraceMs: in.GetGraceMs(),
	}, nil
}

func modeToAPI(m lockstepv1.Mode) (api.Mode, error) {
	switch m {
	case lockstepv1.Mode_MODE_UNSPECIFIED:
		return "", nil
	case lockstepv1.Mode_MODE_EXCLUSIVE:
		return api.Exclusive, nil
	case lockstepv1.Mode_MODE_SHARED:
		return api.Shared, nil
	}
	return "", fmt.Errorf("%w: unknown mode %d", service.ErrInvalid, m)
}

func modeFromAPI(m api.Mode) lockstepv1.Mode {
	switch m {
	case api.Exclusive:
		return lockstepv1.Mode_MODE_EXCLUSIVE
	case api.Shared:
		return lockstepv1.Mode_MODE_SHARED
	}
	return lockstepv1.Mode_MODE_UNSPECIFIED
}

func acquireResponse(out api.AcquireResponse) *lockstepv1.AcquireResponse {
	return &lockstepv1.AcquireResponse{
		Granted: out.Granted, LeaseId: out.LeaseID, FencingToken: out.FencingToken, ExpiresInMs: out.ExpiresInMs,
		Mode: modeFromAPI(out.Mode), QueuePosition: int32(out.QueuePosition), LogTimeMs: out.LogTimeMs,
	}
}

func statusResponse(out api.StatusResponse) *lockstepv1.StatusResponse {
	r := &lockstepv1.StatusResponse{Resource: out.Resource, LogTimeMs: out.LogTimeMs, CaughtUp: out.CaughtUp, Permits: out.Permits,
		Holders: make([]*lockstepv1.Holder, 0, len(out.Holders)), Queue: make([]*lockstepv1.Waiter, 0, len(out.Queue))}
	for _, h := range out.Holders {
		r.Holders = append(r.Holders, &lockstepv1.Holder{ClientId: h.ClientID, LeaseFingerprint: h.LeaseFingerprint,
			Mode: modeFromAPI(h.Mode), FencingToken: h.FencingToken, ExpiresInMs: h.ExpiresInMs,
			State: holderStates[h.State], GraceMs: h.GraceMs, GraceRemainingMs: h.GraceRemainingMs})
	}
	for _, w := range out.Queue {
		r.Queue = append(r.Queue, &lockstepv1.Waiter{ClientId: w.ClientID, Mode: modeFromAPI(w.Mode)})
	}
	return r
}

// holderStates maps the API's holder states onto the proto enum.
var holderStates = map[api.HolderState]lockstepv1.HolderState{
	api.HolderHeld:  lockstepv1.HolderState_HOLDER_STATE_HELD,
	api.HolderGrace: lockstepv1.HolderState_HOLDER_STATE_GRACE,
}

func validateResponse(out api.ValidateResponse) *lockstepv1.ValidateResponse {
	return &lockstepv1.ValidateResponse{Resource: out.Resource, Token: out.Token, Valid: out.Valid,
		HolderTokenMax: out.HolderTokenMax, LogTimeMs: out.LogTimeMs, Stale: out.Stale, CaughtUp: out.CaughtUp}
}

func clusterResponse(out api.ClusterResponse) *lockstepv1.ClusterResponse {
	r := &lockstepv1.ClusterResponse{Leader: out.Leader, MapVersion: out.MapVersion, View: out.View,
		Nodes: make([]*lockstepv1.Node, 0, len(out.Nodes)), Shards: make([]*lockstepv1.Shard, 0, len(out.Shards))}
	for _, n := range out.Nodes {
		r.Nodes = append(r.Nodes, &lockstepv1.Node{Id: n.ID, RaftAddr: n.RaftAddr, HttpAddr: n.HTTPAddr,
			State: n.State, LastContactMs: n.LastContactMs})
	}
	for _, sh := range out.Shards {
		r.Shards = append(r.Shards, &lockstepv1.Shard{Id: int32(sh.ID), Members: sh.Members, Leader: sh.Leader,
			LeaderHttp: sh.LeaderHTTP, Term: sh.Term, CommitIndex: sh.CommitIndex, Resources: int32(sh.Resources)})
	}
	return r
}
